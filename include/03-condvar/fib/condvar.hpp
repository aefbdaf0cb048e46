// condvar.hpp — lesson 3: CondVar, a condition variable for fibers of one FiberManager.
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
    // One fiber's place on the wait list, in its own frame while it waits: the
    // token of its wait, which a notify wakes.
    struct Waiting {
        ParkToken token;
        ListLink<Waiting> link;
    };

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

private:
    void park_in(Waiting& place, const WaitSite& site);  // on the list, parked
    FiberManager& manager_for_notify(const char* operation) const;

    IntrusiveList<Waiting, &Waiting::link> waiters_;
    FiberManager* manager_ = nullptr;  // the manager of the waiting fibers, while there are any
};

}  // namespace fib
