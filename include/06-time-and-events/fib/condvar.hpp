// condvar.hpp — lesson 6: lesson 3's CondVar, from which a waiter can be taken without a notify.
//
// Replaces lesson 3's condvar.hpp from stage 6 on, adding remove(): a wait
// that gives up (wait_for in timer.hpp, when its deadline passes or its fiber
// is cancelled) takes its fiber off the wait list, so that the next notify
// reaches the next waiter.
//
//   fib::CondVar changed;
//   // a consumer fiber:                     // a producer fiber:
//   while (queue.empty()) changed.wait();    queue.push_back(item);
//   take(queue.front());                     changed.notify_one();
//
// Cooperative and single-threaded, so it needs no mutex: no other fiber can run
// between checking the condition and calling wait(), because fibers only switch
// inside calls like wait() and yield(). There are no spurious wake-ups either: a
// waiter runs again only after a notify. Keep the loop all the same: the
// notifier goes on running, and by the time the woken fiber's turn comes another
// fiber may have taken what it was woken for.
//
// Wake order is FIFO: notify_one() wakes the fiber that has waited longest, and
// notify_all() queues every waiter in the order they began to wait.
#pragma once

#include <concepts>
#include <cstddef>

#include "fib/fiber_manager.hpp"
#include "fib/fiber_record.hpp"
#include "fib/intrusive_list.hpp"

namespace fib {

class CondVar {
public:
    CondVar() = default;
    ~CondVar();  // a CondVar with waiters must not die: stops the program naming one
    CondVar(const CondVar&) = delete;
    CondVar& operator=(const CondVar&) = delete;

    // Blocks the running fiber until a notify. The second form tells the
    // deadlock report what the fiber waits for (Channel says "Channel::receive").
    void wait();
    void wait(const WaitSite& site);

    // Waits until `done()` holds; returns at once if it already does.
    template <std::predicate Predicate>
    void wait(Predicate done) {
        while (!done()) wait();
    }

    // Moves the longest waiter (notify_one) or all of them (notify_all) to the
    // back of the ready queue. The caller keeps running; a no-op with no waiters.
    void notify_one();
    void notify_all();

    std::size_t waiters() const { return waiters_.size(); }

    // Takes `fiber`, which must be waiting on this CondVar, off the wait list
    // without waking it: its waker (a timer, a cancel) then wakes it, and no
    // notify will.
    void remove(FiberRecord* fiber) { waiters_.remove(fiber); }

private:
    FiberManager& manager_for_notify(const char* operation) const;

    IntrusiveList<FiberRecord, &FiberRecord::queue_link> waiters_;
    FiberManager* manager_ = nullptr;  // the manager of the waiting fibers, while there are any
};

}  // namespace fib
