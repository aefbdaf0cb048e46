// shard.hpp — lesson 9: Shard, one thread of a Cluster: its manager, its inbox, its dispatcher.
//
// The Cluster's side of each thread (cluster.hpp is the user's side): the
// inbox other threads post to, and what only the thread itself touches. Its
// methods are in shard.cpp; the dispatcher's loop is the heart of the lesson.
#pragma once

#include <cstddef>
#include <exception>
#include <functional>
#include <latch>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "fib/cluster.hpp"
#include "fib/event.hpp"
#include "fib/fiber_manager.hpp"
#include "fib/intrusive_list.hpp"
#include "fib/slots.hpp"

namespace fib {

// One thread of a Cluster. Other threads touch only the inbox: `mutex_` and
// what it guards, then `arrived_`'s set(). The rest is the thread's own.
class Shard {
public:
    Shard(Cluster& cluster, std::size_t index, std::size_t capacity)
        : index(index), cluster_(cluster), slots_(capacity) {}

    void run(const std::function<void(std::size_t)>& main, const char* backend, std::latch& ready,
             std::latch& returned);
    bool post(std::unique_ptr<detail::Posted> call, bool wait);
    void send_wake(std::shared_ptr<SlotTicket> ticket);
    void request_stop();
    FiberManager* manager() const { return manager_; }

    const std::size_t index;
    std::exception_ptr error;  // what this thread's main threw

private:
    // A posted callable's fiber, while it runs; lives in its frame.
    struct Running {
        FiberRecord* fiber;
        ListLink<Running> link;
    };
    template <typename Change>
    void to_inbox(Change change);
    void dispatch();
    void begin_stop();
    void start_posted(std::unique_ptr<detail::Posted> call);
    void run_posted(std::unique_ptr<detail::Posted> call);

    Cluster& cluster_;
    // The inbox, any thread.
    std::mutex mutex_;
    std::vector<std::unique_ptr<detail::Posted>> calls_;
    std::vector<std::shared_ptr<SlotTicket>> wakes_;
    bool stop_requested_ = false;  // for good
    bool stop_unseen_ = false;     // until the dispatcher has taken it in
    bool closed_ = true;           // until the thread is set up, and once it has ended
    std::optional<Event> arrived_; // made on the thread, so that its set() there is a plain flag
    Slots slots_;                  // posted calls queued or running here
    // The thread's own.
    FiberManager* manager_ = nullptr;
    FiberRecord* main_ = nullptr;  // the thread's first fiber, which runs main
    bool main_done_ = false;
    bool stopping_ = false;
    IntrusiveList<Running, &Running::link> running_;
};

}  // namespace fib
