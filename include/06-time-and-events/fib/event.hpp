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
// The state is an eventfd's counter: set() writes 1 to it, from any thread,
// and the kernel makes the eventfd readable; wait() reads it back to 0. A fiber
// waiting on a non-signaled Event waits for the eventfd in the thread's Waiter,
// so a set() from another thread wakes it through poll/epoll like any other
// fd, and nothing ever polls. One fiber at a time may wait on an Event.
#pragma once

#include "fib/unique_fd.hpp"

namespace fib {

class Event {
public:
    Event();  // non-signaled; throws std::system_error if there is no eventfd to be had
    Event(const Event&) = delete;  // the eventfd is the Event: it neither copies nor moves
    Event& operator=(const Event&) = delete;

    // Signals the Event. Safe from any thread, and from a signal handler.
    void set();
    // From a fiber: returns once the Event is signaled, and resets it.
    void wait();
    // Resets the Event if it is signaled; true if it was. Never suspends.
    bool try_wait();

    // The eventfd, readable while the Event is signaled.
    int fd() const { return eventfd_.get(); }

private:
    UniqueFd eventfd_;
};

}  // namespace fib
