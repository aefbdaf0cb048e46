// timers.cpp — lesson 10: lesson 6's timer heap, sleep_for and wait_for, where a timer with on_due is called back.
//
// Replaces lesson 6's timers.cpp from stage 10 on: expire() calls a timer's
// on_due (timer_heap.hpp) where it would wake a fiber.
#include <climits>

#include "fib/cancel.hpp"
#include "fib/fatal.hpp"
#include "fib/timer.hpp"

namespace fib {
TimerHeap& TimerHeap::of_this_thread() {
    return Waiter::of_this_thread("a timer was set").timers();
}

// ---- The heap: heap_[i]'s children are heap_[2i+1] and heap_[2i+2], both later.
bool TimerHeap::earlier(const Timer* a, const Timer* b) {
    return a->deadline < b->deadline || (a->deadline == b->deadline && a->order < b->order);
}

void TimerHeap::place(Timer* timer, std::size_t index) {
    heap_[index] = timer;
    timer->index = index;
}

void TimerHeap::sift_up(std::size_t index) {
    Timer* timer = heap_[index];
    while (index > 0 && earlier(timer, heap_[(index - 1) / 2])) {
        place(heap_[(index - 1) / 2], index);
        index = (index - 1) / 2;
    }
    place(timer, index);
}

void TimerHeap::sift_down(std::size_t index) {
    Timer* timer = heap_[index];
    for (;;) {
        std::size_t child = 2 * index + 1;
        if (child >= heap_.size()) break;
        if (child + 1 < heap_.size() && earlier(heap_[child + 1], heap_[child])) ++child;
        if (!earlier(heap_[child], timer)) break;
        place(heap_[child], index);
        index = child;
    }
    place(timer, index);
}

void TimerHeap::add(Timer& timer) {
    if (timer.index != Timer::kNotSet) fatal("a Timer was added to the heap twice");
    refuse_the_waiters_fiber(timer.token.fiber);
    timer.expired = false;
    timer.order = next_order_++;
    heap_.push_back(&timer);
    sift_up(heap_.size() - 1);
    waiter_.start_if_stopped();  // its loop must now block no longer than this deadline
}

// A timer's on_expire runs on the Waiter's fiber: a sleep there would leave
// nobody to ask the kernel, or to expire the timer.
void TimerHeap::refuse_the_waiters_fiber(const FiberRecord* fiber) const {
    if (fiber == waiter_.self_)
        fatal("the Waiter's own fiber set a timer; it would sleep with nobody left to wake it");
}

// The last timer fills the hole, then moves up or down to where it belongs.
void TimerHeap::cancel(Timer& timer) {
    const std::size_t index = timer.index;
    if (index == Timer::kNotSet) return;
    timer.index = Timer::kNotSet;
    Timer* last = heap_.back();
    heap_.pop_back();
    if (last == &timer) return;
    place(last, index);
    sift_up(index);
    sift_down(last->index);
}

Timer* TimerHeap::pop_front() {
    Timer* front = heap_.front();
    cancel(*front);
    return front;
}

// ---- What the Waiter's loop asks.
// Rounded up: a wait that ends before the deadline would find nothing due and
// come straight back with a timeout of 0, spinning until it is. A deadline
// that has passed is compared with now, not subtracted from it: for one near
// Clock::time_point::min(), deadline - now overflows (undefined behaviour;
// wrapped, it asks for a poll of INT_MAX ms, 24.8 days). One still ahead is
// later than now, which is never below zero: their difference fits.
int TimerHeap::timeout_ms() const {
    if (heap_.empty()) return -1;
    const Clock::time_point now = Clock::now();
    if (heap_.front()->deadline <= now) return 0;
    const Clock::duration left = heap_.front()->deadline - now;
    const auto ms = std::chrono::ceil<std::chrono::milliseconds>(left).count();
    return ms > INT_MAX ? INT_MAX : static_cast<int>(ms);
}

// A fiber that something else woke first (its fd, a notify) is not parked in
// the wait its timer's token names any more: the timer only leaves the heap,
// and cancels nothing.
void TimerHeap::expire() {
    const Clock::time_point now = Clock::now();
    while (!heap_.empty() && heap_.front()->deadline <= now) {
        Timer* timer = pop_front();
        // A coroutine's timer (awaitables.hpp): it is told, and wakes no fiber.
        if (timer->on_due) {
            timer->expired = true;
            timer->on_due(*timer);
            continue;
        }
        if (!FiberManager::parked(timer->token)) continue;
        timer->expired = true;
        if (timer->on_expire) timer->on_expire(*timer);
        timer->token.fiber->manager->wake(timer->token);
    }
}

// ---- What fibers call.
// A timeout that has run out is a deadline of now, not now + timeout: near
// Clock::duration::min() that would be a deadline so far in the past that
// whoever later subtracts now from it (to learn the time left) overflows. One
// too long for the clock is Clock::time_point::max(), "no limit"; max() - now
// fits, as steady_clock's now (time since boot) is never below zero.
Clock::time_point deadline_after(Clock::duration timeout) {
    const Clock::time_point now = Clock::now();
    if (timeout <= Clock::duration::zero()) return now;
    if (timeout > Clock::time_point::max() - now) return Clock::time_point::max();
    return now + timeout;
}

bool sleep_for(Clock::duration timeout) {
    FiberManager::of_this_thread("sleep_for() was called");
    return sleep_until(deadline_after(timeout));
}

bool sleep_until(Clock::time_point deadline) {
    FiberManager& manager = FiberManager::of_this_thread("sleep_until() was called");
    TimerHeap& timers = TimerHeap::of_this_thread();
    timers.refuse_the_waiters_fiber(manager.running());
    if (this_fiber::cancelled()) return false;
    if (deadline <= Clock::now()) return true;
    Timer timer{deadline, manager.begin_wait()};
    timers.add(timer);
    const CancelScope cancellable(timer.token);
    manager.park(timer.token, WaitSite{"sleep_for", nullptr, nullptr});
    timers.cancel(timer);  // a cancel came first: the deadline is moot
    return !cancellable.woke_it();
}

// Three wakers race: a notify, the timer and a cancel. The timer and the
// cancel each take the fiber off the CondVar's list before waking it, so no
// later notify is spent on a fiber that has stopped waiting.
WaitResult wait_for(CondVar& condvar, Clock::duration timeout) {
    FiberManager& manager = FiberManager::of_this_thread("wait_for() was called");
    TimerHeap& timers = TimerHeap::of_this_thread();
    timers.refuse_the_waiters_fiber(manager.running());
    if (this_fiber::cancelled()) return {WaitResult::kCancelled};
    // A timeout that has run out ends the wait before it begins, as a sleep's
    // does: no timer, no place on the CondVar's list, no switch.
    if (timeout <= Clock::duration::zero()) return {WaitResult::kTimedOut};
    // One wait, one token, three wakers; the place on the CondVar's list, and
    // what the timer and the cancel take the fiber off.
    struct Place {
        CondVar& condvar;
        CondVar::Waiting waiting;
        static void leave(void* place) {
            Place& self = *static_cast<Place*>(place);
            self.condvar.remove(self.waiting);
        }
    } place{condvar, {manager.begin_wait(), {}}};
    Timer timer{deadline_after(timeout), place.waiting.token};
    timer.context = &place;
    timer.on_expire = [](Timer& expired) { Place::leave(expired.context); };
    timers.add(timer);
    const CancelScope cancellable(place.waiting.token, &Place::leave, &place);
    condvar.wait(place.waiting, WaitSite{"wait_for (CondVar)", nullptr, &condvar});
    timers.cancel(timer);  // a notify or a cancel came first: the deadline is moot
    if (cancellable.woke_it()) return {WaitResult::kCancelled};
    return {timer.expired ? WaitResult::kTimedOut : WaitResult::kNotified};
}

}  // namespace fib
