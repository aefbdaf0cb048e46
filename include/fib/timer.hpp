// timer.hpp — lesson 5: timers: sleep_for, CondVar waits with a timeout, and the heap behind them.
//
//   fib::sleep_for(50ms);                        // this fiber only; the others run
//   if (!fib::wait_for(changed, 1s)) ...         // a CondVar wait that gives up after 1 s
//
// Every deadline of a thread sits in one binary min-heap, kept by the Waiter
// (it is the Waiter's WaiterClock, see waiter.hpp). When nothing is ready to
// run, the Waiter blocks in poll/epoll for exactly as long as the nearest
// deadline allows, then wakes the fibers whose deadline has passed, in
// deadline order. There is no tick: a thread whose fibers all sleep for an
// hour makes one system call in that hour.
//
// Heap or wheel? A heap keeps any deadline exactly and costs O(log n) to add
// or cancel one. A timer wheel (Lwan's, the Linux kernel's) costs O(1), but
// rounds deadlines to its slot width and must be advanced slot by slot. With
// thousands of timers the log n is a dozen compares, small beside the system
// call each wait makes, so this course takes the simpler, exact heap.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "fib/condvar.hpp"
#include "fib/fiber_record.hpp"
#include "fib/waiter.hpp"

namespace fib {

using Clock = std::chrono::steady_clock;

// One deadline of one waiting fiber, kept in that fiber's frame. When it
// expires and the fiber is still blocked, `on_expire` (if any) undoes the rest
// of the wait (wait_for takes the fiber off its CondVar), then the fiber wakes.
struct Timer {
    Clock::time_point deadline;
    FiberRecord* fiber;
    void (*on_expire)(Timer& timer) = nullptr;
    void* context = nullptr;       // for on_expire
    bool expired = false;          // set when the deadline woke the fiber
    std::uint64_t order = 0;       // equal deadlines expire in the order they were set
    std::size_t index = kNotSet;   // where the heap keeps it
    static constexpr std::size_t kNotSet = ~std::size_t{0};
};

class TimerHeap : public WaiterClock {
public:
    // This thread's heap, in its Waiter (which must exist); made on first use.
    static TimerHeap& of_this_thread();

    void add(Timer& timer);     // waits for timer.deadline
    void cancel(Timer& timer);  // a timer that has not expired; a no-op if it has
    std::size_t size() const { return heap_.size(); }

    bool pending() const override { return !heap_.empty(); }
    int timeout_ms() override;
    void expire() override;

private:
    explicit TimerHeap(Waiter& waiter) : waiter_(waiter) {}
    static bool earlier(const Timer* a, const Timer* b);
    void place(Timer* timer, std::size_t index);
    void sift_up(std::size_t index);
    void sift_down(std::size_t index);
    Timer* pop_front();

    Waiter& waiter_;
    std::vector<Timer*> heap_;  // heap_[0] is the nearest deadline
    std::uint64_t next_order_ = 0;
};

// now + timeout, or Clock::time_point::max() when that is beyond the clock's
// range: Clock::duration::max() means "no real limit", not an overflow.
Clock::time_point deadline_after(Clock::duration timeout);

// Blocks the running fiber until `timeout` has passed (until `deadline`).
// Returns at once, without yielding, if it already has.
void sleep_for(Clock::duration timeout);
void sleep_until(Clock::time_point deadline);

// CondVar::wait() that gives up after `timeout`: true if a notify woke the
// fiber, false if the time ran out first. (A function beside CondVar, not a
// member: CondVar is lesson 3's, and has no timers.)
bool wait_for(CondVar& condvar, Clock::duration timeout);

}  // namespace fib
