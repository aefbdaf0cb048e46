// slots.hpp — lesson 9: Slots, a bound shared by the threads of a Cluster, and fibers that wait
// for room in it.
//
//   fib::Slots slots(64);        // at most 64 things in flight
//   if (slots.take("send")) {    // a fiber of a cluster thread: parks while all 64 are taken
//       ...                      // put one thing in flight; whoever finishes it calls
//   }                            // slots.give_back(), from any thread
//
// A queue between threads needs a bound, or a fast sender fills the memory
// of a slow receiver. With a bound, a sender that finds no room must wait,
// and a *fiber* must not wait by blocking its thread: the thread's other
// fibers, the receiver's own perhaps, would stop too. So a fiber that finds
// every slot taken parks, and leaves a ticket in the Slots' queue. The thread
// that gives a slot back hands it to the first ticket directly (no other
// sender can barge in and starve it) and sends the ticket home: to the
// dispatcher of the waiting fiber's own thread (shard.cpp), which wakes the
// fiber there. Only a fiber's own thread ever touches its record.
//
//   fiber on thread 0            thread 1 (the receiver)          thread 0's dispatcher
//   take(): full -> ticket ----> give_back(): ticket granted ---> wake(fiber): it resumes
//
// A wake carries one ticket, so a thread's wakes are bounded by its fibers.
// take() is cancellable (lesson 6).
#pragma once

#include <cstddef>
#include <deque>
#include <memory>
#include <mutex>

#include "fib/fiber_record.hpp"

namespace fib {

class Shard;  // a Cluster's thread: its manager and its dispatcher (shard.hpp)

// A fiber parked in take(), and the slot handed to it.
struct SlotTicket {
    Shard* home;                 // where the wake goes
    ParkToken waiter;            // touched on the home thread only; empty once it stops waiting
    bool granted = false;        // under the Slots' mutex: the slot is the fiber's
};

namespace detail {
// shard.cpp: the shard of the calling thread (fatal, naming `what`, on a thread
// outside every Cluster); the wake of a ticket's fiber, sent to its home; and
// the home told that one of its fibers begins or ends a wait for a slot (a
// thread does not end while its fibers wait: their wakes would have nowhere to go).
Shard& shard_of_this_thread(const char* what);
void send_wake(Shard& home, std::shared_ptr<SlotTicket> ticket);
void slot_wait(Shard& home, bool begins);
}  // namespace detail

class Slots {
public:
    explicit Slots(std::size_t capacity);  // at least 1
    ~Slots();  // a fiber still waiting in take() stops the program, with a message
    Slots(const Slots&) = delete;
    Slots& operator=(const Slots&) = delete;

    // From any thread: a slot if one is free; false if none is, or closed.
    bool try_take();
    // From a fiber of a Cluster's thread: a slot, parking until one is given
    // back. False if the Slots are closed, or the fiber is cancelled first.
    bool take(const char* what);
    // From any thread: one slot free again, handed to the first waiter if any.
    void give_back();
    // From any thread: take() and try_take() fail from now on; waiters wake.
    void close();

    std::size_t capacity() const { return capacity_; }
    std::size_t in_use();  // for tests: slots taken and not given back

private:
    const std::size_t capacity_;
    std::mutex mutex_;
    std::size_t used_ = 0;
    bool closed_ = false;
    std::deque<std::shared_ptr<SlotTicket>> waiting_;
};

}  // namespace fib
