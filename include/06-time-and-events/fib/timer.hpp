// timer.hpp — lesson 6: timers for fibers: sleep_for, and CondVar waits with a timeout.
//
//   fib::sleep_for(50ms);                        // this fiber only; the others run
//   if (!fib::wait_for(changed, 1s)) ...         // a CondVar wait that gives up after 1 s
//                                                // (or is cancelled, see cancel.hpp)
//
// Each call puts one Timer in the thread's TimerHeap (timer_heap.hpp), kept
// by the Waiter, and parks the fiber until the deadline or, for wait_for, a
// notify, whichever comes first.
#pragma once

#include "fib/condvar.hpp"
#include "fib/timer_heap.hpp"
#include "fib/waiter.hpp"

namespace fib {

// now + timeout, or Clock::time_point::max() when that is beyond the clock's
// range: Clock::duration::max() means "no real limit", not an overflow. A
// timeout of zero or less (down to Clock::duration::min()) gives now: a
// deadline already passed, never one so far back that deadline - now overflows.
Clock::time_point deadline_after(Clock::duration timeout);

// Blocks the running fiber until `timeout` has passed (until `deadline`).
// Returns at once, without yielding, if it already has (any timeout of zero or
// less; any deadline not after now, Clock::time_point::min() too). True when
// the time has passed; false if the fiber was cancelled (cancel.hpp) first.
bool sleep_for(Clock::duration timeout);
bool sleep_until(Clock::time_point deadline);

// How a CondVar wait with a timeout ended.
struct WaitResult {
    enum Why : unsigned char { kNotified, kTimedOut, kCancelled };
    Why why;
    bool notified() const { return why == kNotified; }
    bool timed_out() const { return why == kTimedOut; }
    bool cancelled() const { return why == kCancelled; }
    explicit operator bool() const { return notified(); }
};

// CondVar::wait() that gives up after `timeout`, or when the fiber is
// cancelled: notified(), timed_out() or cancelled(). With
// Clock::duration::max() it is a wait that only a notify or a cancel ends;
// with a timeout of zero or less it is timed_out() at once, without yielding.
// (A function beside CondVar, not a member: CondVar is lesson 3's, and knows
// nothing of time; and its own wait() is not cancelled, see cancel.hpp.)
WaitResult wait_for(CondVar& condvar, Clock::duration timeout);

}  // namespace fib
