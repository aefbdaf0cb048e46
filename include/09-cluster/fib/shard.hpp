// shard.hpp — lesson 9: Shard, one thread of a Cluster: its manager, its inbox, its dispatcher.
//
// The Cluster's side of each thread (cluster.hpp is the user's side): the
// inbox other threads post to, and what only the thread itself touches. Its
// methods are in shard.cpp; the dispatcher's loop is the heart of the lesson.
#pragma once

#include <atomic>
#include <cstddef>
#include <exception>
#include <functional>
#include <latch>
#include <memory>

#include "fib/cluster.hpp"
#include "fib/fiber_manager.hpp"
#include "fib/inbox.hpp"
#include "fib/intrusive_list.hpp"
#include "fib/slots.hpp"

namespace fib {

// One thread of a Cluster. Other threads touch only its inbox (lesson 8's
// Inbox: post() under its mutex), its Slots and `stop_requested_`. The rest is
// the thread's own.
class Shard {
public:
    Shard(Cluster& cluster, std::size_t index, std::size_t capacity)
        : index(index), cluster_(cluster), slots_(capacity) {}

    void run(const std::function<void(std::size_t)>& main, const char* backend, std::latch& ready,
             std::latch& returned);
    bool post(std::unique_ptr<detail::Posted> call, bool wait);
    void send_wake(std::shared_ptr<SlotTicket> ticket);
    void request_stop();
    // A fiber of this thread begins or ends a wait for a slot (slots.cpp): its
    // wake will come through this inbox, so the thread must not end meanwhile.
    void slot_wait(bool begins);
    FiberManager* manager() const { return manager_; }

    const std::size_t index;
    std::exception_ptr error;  // what this thread's main threw

private:
    // A posted callable's fiber, while it runs; lives in its frame.
    struct Running {
        FiberRecord* fiber;
        ListLink<Running> link;
    };
    // What other threads send: a call to run, a slot's wake, or a look (a stop,
    // or news of the thread's own).
    struct Message {
        std::unique_ptr<detail::Posted> call;
        std::shared_ptr<SlotTicket> wake;
    };
    void dispatch();
    void begin_stop();
    void start_posted(std::unique_ptr<detail::Posted> call);
    void run_posted(std::unique_ptr<detail::Posted> call);

    Cluster& cluster_;
    // Any thread. The inbox is closed until the thread has set up (it opens it,
    // making its Event there) and once it has ended (it releases it there).
    Inbox<Message> inbox_{Inbox<Message>::Closed{}};
    std::atomic<bool> stop_requested_{false};  // for good
    Slots slots_;                              // posted calls queued or running here
    // The thread's own.
    FiberManager* manager_ = nullptr;
    FiberRecord* main_ = nullptr;  // the thread's first fiber, which runs main
    bool main_done_ = false;
    bool stopping_ = false;
    std::size_t slot_waits_ = 0;   // fibers of this thread waiting for a slot, anywhere
    IntrusiveList<Running, &Running::link> running_;
};

}  // namespace fib
