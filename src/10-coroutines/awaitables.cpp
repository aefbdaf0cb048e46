// awaitables.cpp — lesson 10: registering a suspended task with the Waiter and the TimerHeap, and its wakers.
#include "fib/awaitables.hpp"

#include "fib/fatal.hpp"
#include "fib/timer.hpp"

namespace fib::co {

void no_executor(const char* what) {
    fatal("%s in a coroutine that no Executor runs; spawn its task on an Executor, or await it "
          "from one that is", what);
}

// The registration names the Executor's fiber, which the task runs on: the
// Waiter's messages (two waits on one fd, waits left at its end) name it.
void FdAwaiter::suspend(const Waker& task, Executor& executor) {
    waiter_ = &Waiter::of_this_thread("co_await readable()/writable()");
    executor_ = &executor;
    task_ = task;
    waiting_.token = ParkToken{FiberManager::current()->running(), 0};  // names it; wakes nothing
    waiter_->watch(waiting_);
}

void FdAwaiter::ready(Waiter::Waiting& waiting) {
    FdAwaiter& awaiter = *static_cast<FdAwaiter*>(waiting.context);
    awaiter.waiter_ = nullptr;  // the Waiter has dropped the registration
    awaiter.executor_->schedule(awaiter.task_);
}

FdAwaiter::~FdAwaiter() {
    if (waiter_) waiter_->unwatch(waiting_);
}

void SleepAwaiter::suspend(const Waker& task, Executor& executor) {
    timers_ = &TimerHeap::of_this_thread();
    executor_ = &executor;
    task_ = task;
    timer_.token = ParkToken{FiberManager::current()->running(), 0};  // names it; wakes nothing
    timer_.on_due = &SleepAwaiter::due;
    timer_.context = this;
    timers_->add(timer_);
}

void SleepAwaiter::due(Timer& timer) {
    SleepAwaiter& awaiter = *static_cast<SleepAwaiter*>(timer.context);
    awaiter.timers_ = nullptr;  // the heap has dropped the timer
    awaiter.executor_->schedule(awaiter.task_);
}

SleepAwaiter::~SleepAwaiter() {
    if (timers_) timers_->cancel(timer_);
}

SleepAwaiter sleep_until(Clock::time_point deadline) { return SleepAwaiter(deadline); }
SleepAwaiter sleep_for(Clock::duration timeout) { return SleepAwaiter(deadline_after(timeout)); }

}  // namespace fib::co
