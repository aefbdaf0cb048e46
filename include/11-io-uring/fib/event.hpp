// event.hpp — lesson 11: lesson 6's Event, whose set() from another thread may travel as a ring message.
//
// Replaces lesson 6's event.hpp from stage 11 on. Where the Event's owner
// runs the uring-msg rung (pollers.hpp) and the setting thread's Waiter is a
// ring with operations (uring_io.hpp), set() from that thread raises the flag
// and sends the owner's ring an IORING_OP_MSG_RING message (uring_msg.cpp)
// instead of writing the eventfd; if the message cannot go, it writes the
// eventfd after all. Everywhere else, and always in set_through_eventfd()
// (signal handlers), it is lesson 6's Event. What attach() adds: the owner
// records where messages must go (its ring and the eventfd's life there).
// Lifetimes: as lesson 6's (the setter keeps the Event alive during set());
// a message that arrives after the Event died, or after its eventfd number
// was reused, carries an old life and wakes nobody. set() on a uring-msg
// sender enters the sender's ring and returns once the kernel said whether
// the message went. Lesson 6's said:
//
// event.hpp — lesson 6: Event, a two-state flag a fiber can wait on and any thread can set.
//
//   fib::Event done;
//   std::thread worker([&] { compute(); done.set(); });   // any thread
//   done.wait();                                           // a fiber: sleeps until set
//
// Two states, signaled and not. wait() on a non-signaled Event suspends the
// fiber until set() is called; wait() on a signaled Event returns at once.
// Either way it leaves the Event non-signaled. set() on a signaled Event
// changes nothing: sets are not counted.
//
// An Event belongs to a thread: the one that made it, if it had a
// FiberManager, or else the one whose fiber first waits on it (wait_any
// counts). It keeps its state in two places, by who sets it:
//
//   set() on that thread             a flag, and the waiting fiber is woken
//                                    directly: no system call at all
//   set() on another thread,         writes 1 to an eventfd, which the Waiter
//   set_through_eventfd()            watches while a fiber waits: the kernel
//                                    wakes it through poll/epoll
//
// A chat room's fibers set each other's Events on one thread, a line at a
// time, so the first path is the one that counts. The eventfd is for other
// threads and for signal handlers, which must not touch the fibers' queues: a
// handler may interrupt the Event's own thread anywhere, even inside the
// manager, so it calls set_through_eventfd(). Nothing ever polls. One fiber
// at a time may wait on an Event, and only a fiber of its thread.
#pragma once

#include <atomic>
#include <cstdint>

#include "fib/fiber_manager.hpp"
#include "fib/unique_fd.hpp"

namespace fib {

class Event {
public:
    Event();   // non-signaled; throws std::system_error if there is no eventfd to be had
    // An Event a fiber waits on must not die: stops the program naming it. Nor
    // may it die on another thread than its own while that one still runs, once
    // a fiber has waited on it: its eventfd is registered with that thread's
    // Waiter, which only a close there tells (lesson 5). That stops the program too.
    ~Event();
    Event(const Event&) = delete;  // fibers and the Waiter hold its address: it never moves
    Event& operator=(const Event&) = delete;

    // Signals the Event, from any thread: see above. Not from a signal
    // handler (on the Event's thread it touches the fibers' queues).
    void set();
    // Signals the Event through the eventfd only: async-signal-safe, and keeps
    // errno, for a signal handler; and the way for a fiber to wake a thread
    // that watches fd() itself, since a same-thread set() leaves fd() alone.
    void set_through_eventfd();

    // From a fiber: returns true once the Event is signaled, and resets it;
    // false if the fiber is cancelled first (cancel.hpp).
    bool wait();
    // Resets the Event if it is signaled; true if it was. Never suspends;
    // safe from any thread.
    bool try_wait();

    // For wait_any (wait_any.hpp): the flag, without resetting it; the
    // eventfd (to watch, never to write); and the wait a same-thread set()
    // wakes, while there is one.
    bool flag_set() const { return signaled_.load(std::memory_order_relaxed); }
    int fd() const { return eventfd_.get(); }
    void attach(ParkToken waiting);
    void detach() { waiting_ = ParkToken{}; }

private:
    UniqueFd eventfd_;
    std::atomic<FiberManager*> owner_{nullptr};  // the thread's manager, from the first wait
    int owner_thread_ = 0;                       // its thread's id, once a fiber has waited
    std::atomic<bool> eventfd_used_{false};      // set for good by the first eventfd write
    std::atomic<bool> signaled_{false};          // set() on the owner's thread, or a ring message's sender
    ParkToken waiting_;                          // the wait of the fiber in wait() or wait_any()
    // Where another thread's ring sends its message (UringPoller::message_target):
    // the owner's ring fd and the eventfd's life there in one word, so that no
    // sender reads half of an update; 0: no ring takes messages for it.
    std::atomic<std::uint64_t> ring_target_{0};
    bool set_through_ring();
    void record_ring_target();
};

}  // namespace fib
