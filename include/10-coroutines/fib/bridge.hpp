// bridge.hpp — lesson 10: fibers and tasks on one thread, each waiting for the other.
//
//   // in a fiber: run a task on the Executor, and park until it ends
//   std::size_t lines = fib::co::run_and_wait(executor, count_lines(fd));
//   // in a task: run a function on a fiber of its own, and resume with its result
//   std::string text = co_await fib::co::in_fiber([&] { return parse_with_callbacks(fd); });
//
// run_and_wait is how fiber code (lessons 2-9) calls a coroutine library: the
// fiber parks, the task runs on the Executor's fiber, and its end wakes the
// fiber with its value or its exception. A cancel of the fiber (lesson 6)
// ends it: the task is destroyed, as cancel_all() would, and run_and_wait
// throws fib::Cancelled; so a Cluster's stop reaches a thread whose main waits
// here. It cannot be called from a task: the Executor's fiber would park
// waiting for a task only it can run. A task awaits a task with co_await
// instead: that is function colouring, and it reaches all the way up.
//
// in_fiber is the other way, and the escape from the colouring: a task hands
// work that must wait somewhere a coroutine cannot suspend (inside a callback,
// a library function, a deep call chain that knows nothing of coroutines) to
// a fiber, which has a stack of its own and can park anywhere in it. It is
// also how a task waits for a fiber that already runs:
// co_await in_fiber([&] { worker.join(); }). If the task is destroyed while
// the fiber runs, the fiber is cancelled (cancel.hpp) and joined first, and
// its result dropped: every wait ends on a cancel, so that join lasts only
// as long as the fiber's own shielded clean-up (CancelShield), if it has one.
#pragma once

#include <coroutine>
#include <exception>
#include <functional>
#include <optional>
#include <stdexcept>
#include <type_traits>
#include <utility>

#include "fib/awaitables.hpp"
#include "fib/cancel.hpp"
#include "fib/executor.hpp"
#include "fib/fatal.hpp"
#include "fib/fiber.hpp"

namespace fib::co {

namespace detail {

// What a task's end hands back to the fiber parked in run_and_wait.
template <typename T>
struct Outcome {
    std::optional<std::conditional_t<std::is_void_v<T>, bool, T>> value;
    std::exception_ptr error;
    bool done = false;
    ParkToken waiter;  // the wait of the fiber parked until done
};

// Ends the outcome however the relay ends: with the task, or destroyed by
// Executor::cancel_all before it, which the fiber learns as an exception.
template <typename T>
struct Finish {
    Outcome<T>& outcome;
    ~Finish() {
        if (!outcome.value && !outcome.error)
            outcome.error = std::make_exception_ptr(std::runtime_error(
                "co::run_and_wait: the task was destroyed before it ended (Executor::cancel_all)"));
        outcome.done = true;
        if (outcome.waiter.fiber) outcome.waiter.fiber->manager->wake(outcome.waiter);
    }
};

template <typename T>
Task<void> relay(Task<T> task, Outcome<T>& outcome) {
    const Finish<T> finish{outcome};
    try {
        if constexpr (std::is_void_v<T>) {
            co_await std::move(task);
            outcome.value.emplace(true);
        } else {
            outcome.value.emplace(co_await std::move(task));
        }
    } catch (...) {
        outcome.error = std::current_exception();
    }
}

}  // namespace detail

template <typename T>
T run_and_wait(Executor& executor, Task<T> task) {
    FiberManager& manager = FiberManager::of_this_thread("co::run_and_wait() was called");
    if (executor.running_a_task())
        fatal("co::run_and_wait() was called from a task (on %s): the Executor's fiber would park "
              "waiting for a task only it can run; co_await the task instead",
              label(*manager.running()).text);
    if (this_fiber::cancelled()) throw Cancelled("co::run_and_wait");
    detail::Outcome<T> outcome;
    outcome.waiter = manager.begin_wait();
    const std::uint64_t id = executor.spawn(detail::relay(std::move(task), outcome), "run_and_wait");
    {
        const CancelScope cancellable(outcome.waiter);
        while (!outcome.done && !cancellable.woke_it())
            manager.park(outcome.waiter, WaitSite{"co::run_and_wait", nullptr, &executor});
    }
    if (!outcome.done) {
        // Cancelled: the task goes first (its awaits withdrawn, its frame
        // freed), then this frame, which it would otherwise write into.
        executor.cancel(id);
        throw Cancelled("co::run_and_wait");
    }
    if (outcome.error) std::rethrow_exception(outcome.error);
    if constexpr (!std::is_void_v<T>) return std::move(*outcome.value);
}

template <typename Function>
class InFiber {
public:
    using Result = std::invoke_result_t<Function&>;

    explicit InFiber(Function function) : function_(std::move(function)) {}
    ~InFiber() {
        if (!fiber_.joinable()) return;
        abandoned_ = true;  // the task is being destroyed: nobody to resume
        fiber_.cancel();
        fiber_.join();
    }
    InFiber(const InFiber&) = delete;
    InFiber& operator=(const InFiber&) = delete;

    bool await_ready() const noexcept { return false; }
    template <typename Promise>
    void await_suspend(std::coroutine_handle<Promise> task) {
        Executor& executor = executor_of(task, "co_await in_fiber()");
        fiber_ = Fiber({.name = "in_fiber"}, [this, &executor, waker = waker_of(task)] {
            try {
                if constexpr (std::is_void_v<Result>) {
                    std::invoke(function_);
                    value_.emplace(true);
                } else {
                    value_.emplace(std::invoke(function_));
                }
            } catch (...) {
                error_ = std::current_exception();
            }
            if (!abandoned_) executor.schedule(waker);
        });
    }
    Result await_resume() {
        fiber_.join();
        if (error_) std::rethrow_exception(error_);
        if constexpr (!std::is_void_v<Result>) return std::move(*value_);
    }

private:
    Function function_;
    std::optional<std::conditional_t<std::is_void_v<Result>, bool, Result>> value_;
    std::exception_ptr error_;
    bool abandoned_ = false;
    Fiber fiber_;
};

template <typename Function>
InFiber<Function> in_fiber(Function function) {
    return InFiber<Function>(std::move(function));
}

}  // namespace fib::co
