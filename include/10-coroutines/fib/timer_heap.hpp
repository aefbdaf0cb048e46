// timer_heap.hpp — lesson 10: lesson 6's timer heap, whose timers can also call back instead of waking a fiber.
//
// Replaces lesson 6's timer_heap.hpp from stage 10 on, adding Timer::on_due:
// a timer that has one is a suspended coroutine's (awaitables.hpp), and when
// it expires the heap calls on_due instead of waking `fiber`. The rest is
// lesson 6's, which said:
//
//
// Every deadline of a thread sits in one binary min-heap, kept by the Waiter
// (waiter.hpp). When nothing is ready to run, the Waiter blocks in poll/epoll
// for exactly as long as the nearest deadline allows, then wakes the fibers
// whose deadline has passed, in deadline order. There is no tick: a thread
// whose fibers all sleep for an hour makes one system call in that hour.
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

#include "fib/fiber_record.hpp"

namespace fib {

class Waiter;
using Clock = std::chrono::steady_clock;

// One deadline of one waiting fiber, kept in that fiber's frame. When it
// expires and the fiber is still parked in the wait its token names,
// `on_expire` (if any) undoes the rest of the wait (wait_for takes the fiber
// off its CondVar), then the fiber wakes.
struct Timer {
    Clock::time_point deadline;
    ParkToken token;               // the wait it ends
    void (*on_expire)(Timer& timer) = nullptr;
    void* context = nullptr;       // for on_expire
    bool expired = false;          // set when the deadline woke the fiber
    std::uint64_t order = 0;       // equal deadlines expire in the order they were set
    std::size_t index = kNotSet;   // where the heap keeps it
    // With on_due: called when the deadline passes (on the Waiter's fiber),
    // instead of waking a fiber; `token` then only names the one that set it.
    void (*on_due)(Timer& timer) = nullptr;
    static constexpr std::size_t kNotSet = ~std::size_t{0};
};

class TimerHeap {
public:
    explicit TimerHeap(Waiter& waiter) : waiter_(waiter) {}
    TimerHeap(const TimerHeap&) = delete;
    TimerHeap& operator=(const TimerHeap&) = delete;

    // This thread's heap, in its Waiter (which must exist).
    static TimerHeap& of_this_thread();

    void add(Timer& timer);     // waits for timer.deadline
    // Stops the program if `fiber` is the Waiter's own: a timer's on_expire
    // runs there, and a sleep there leaves nobody to wake it. add() asks, and
    // so do sleep_until and wait_for before a deadline that has passed lets
    // them return at once: the misuse stops whatever the clock says.
    void refuse_the_waiters_fiber(const FiberRecord* fiber) const;
    void cancel(Timer& timer);  // a timer that has not expired; a no-op if it has
    std::size_t size() const { return heap_.size(); }

    // What the Waiter's loop asks.
    bool pending() const { return !heap_.empty(); }  // a deadline is set
    int timeout_ms() const;  // until the nearest deadline, rounded up; -1: none
    void expire();           // wakes the fibers whose deadline has passed

private:
    static bool earlier(const Timer* a, const Timer* b);
    void place(Timer* timer, std::size_t index);
    void sift_up(std::size_t index);
    void sift_down(std::size_t index);
    Timer* pop_front();

    Waiter& waiter_;
    std::vector<Timer*> heap_;  // heap_[0] is the nearest deadline
    std::uint64_t next_order_ = 0;
};

}  // namespace fib
