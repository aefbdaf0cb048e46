// awaitables.hpp — lesson 10: what a task co_awaits on the reactor: an fd's readiness, a deadline, its turn.
//
//   short revents = co_await fib::co::readable(fd);   // POLLIN (or POLLHUP, POLLERR, ...)
//   co_await fib::co::writable(fd);
//   co_await fib::co::sleep_for(10ms);
//   co_await fib::co::yield();                        // the other ready tasks first
//
// Each awaiter lives in the awaiting task's frame, for as long as the task is
// suspended on it, so the registration it makes with the Waiter (a Waiting) or
// the TimerHeap (a Timer) sits in the frame too: no allocation. When the fd is
// ready (the deadline passes), the reactor calls the registration's on_ready
// (on_due), which hands the task's handle to its Executor: that is the waker.
// A task destroyed while suspended (Executor::cancel_all) destroys the awaiter,
// whose destructor withdraws the registration: nothing is left to call back
// into a frame that is gone.
//
// Only a task an Executor runs may await these (its promise names the
// Executor); one driven by hand stops the program here, with a message. As
// with the fibers' Waiter::wait, one task per direction per fd.
#pragma once

#include <poll.h>

#include <coroutine>
#include <type_traits>

#include "fib/executor.hpp"
#include "fib/timer_heap.hpp"
#include "fib/waiter.hpp"

namespace fib::co {

[[noreturn]] void no_executor(const char* what);

// The Executor of the task that awaits, from its promise.
template <typename Promise>
Executor& executor_of(std::coroutine_handle<Promise> task, const char* what) {
    static_assert(std::is_base_of_v<detail::OnExecutor, Promise>,
                  "only a fib::Task (or a task an Executor runs) can co_await this");
    if (!task.promise().executor) no_executor(what);
    return *task.promise().executor;
}

class FdAwaiter {
public:
    FdAwaiter(int fd, short events) : waiting_{fd, events, 0, {}, &FdAwaiter::ready, this} {}
    ~FdAwaiter();  // withdraws the registration if it has not fired
    FdAwaiter(const FdAwaiter&) = delete;
    FdAwaiter& operator=(const FdAwaiter&) = delete;

    bool await_ready() const noexcept { return false; }
    template <typename Promise>
    void await_suspend(std::coroutine_handle<Promise> task) {
        suspend(waker_of(task), executor_of(task, "co_await readable()/writable()"));
    }
    // poll's revents for the fd, as Waiter::wait returns them.
    short await_resume() const noexcept { return waiting_.revents; }

private:
    void suspend(const Waker& task, Executor& executor);
    static void ready(Waiter::Waiting& waiting);  // on_ready: the waker

    Waiter::Waiting waiting_;
    Waiter* waiter_ = nullptr;  // while registered
    Executor* executor_ = nullptr;
    Waker task_;
};

inline FdAwaiter readable(int fd) { return FdAwaiter(fd, POLLIN); }
inline FdAwaiter writable(int fd) { return FdAwaiter(fd, POLLOUT); }

class SleepAwaiter {
public:
    explicit SleepAwaiter(Clock::time_point deadline) { timer_.deadline = deadline; }
    ~SleepAwaiter();  // cancels the timer if it has not expired
    SleepAwaiter(const SleepAwaiter&) = delete;
    SleepAwaiter& operator=(const SleepAwaiter&) = delete;

    bool await_ready() const { return timer_.deadline <= Clock::now(); }
    template <typename Promise>
    void await_suspend(std::coroutine_handle<Promise> task) {
        suspend(waker_of(task), executor_of(task, "co_await sleep_for()"));
    }
    void await_resume() const noexcept {}

private:
    void suspend(const Waker& task, Executor& executor);
    static void due(Timer& timer);  // on_due: the waker

    Timer timer_{};
    TimerHeap* timers_ = nullptr;  // while set
    Executor* executor_ = nullptr;
    Waker task_;
};

SleepAwaiter sleep_until(Clock::time_point deadline);
SleepAwaiter sleep_for(Clock::duration timeout);

// Goes to the back of the Executor's ready queue.
struct YieldAwaiter {
    bool await_ready() const noexcept { return false; }
    template <typename Promise>
    void await_suspend(std::coroutine_handle<Promise> task) {
        executor_of(task, "co_await yield()").schedule(waker_of(task));
    }
    void await_resume() const noexcept {}
};
inline YieldAwaiter yield() { return {}; }

}  // namespace fib::co
