// timer.hpp — lesson 6: timers for fibers: sleep_for, and CondVar waits with a timeout.
//
//   fib::sleep_for(50ms);                        // this fiber only; the others run
//   if (!fib::wait_for(changed, 1s)) ...         // a CondVar wait that gives up after 1 s
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
// range: Clock::duration::max() means "no real limit", not an overflow.
Clock::time_point deadline_after(Clock::duration timeout);

// Blocks the running fiber until `timeout` has passed (until `deadline`).
// Returns at once, without yielding, if it already has.
void sleep_for(Clock::duration timeout);
void sleep_until(Clock::time_point deadline);

// CondVar::wait() that gives up after `timeout`: true if a notify woke the
// fiber, false if the time ran out first. (A function beside CondVar, not a
// member: CondVar is lesson 3's, and knows nothing of time.)
bool wait_for(CondVar& condvar, Clock::duration timeout);

}  // namespace fib
