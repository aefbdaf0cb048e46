// task.hpp — lesson 10: Task<T>, a lazy C++20 coroutine that another coroutine co_awaits.
//
//   fib::Task<int> answer() { co_return 42; }
//   fib::Task<int> twice() { co_return 2 * co_await answer(); }
//
// A Task does nothing until it is awaited (lazy): `co_await task` starts it,
// and the awaiting coroutine resumes when it ends, with its value, or with its
// exception rethrown. The hand-over both ways is a symmetric transfer: the
// awaiter's await_suspend returns the task's handle, the task's final_suspend
// returns the awaiter's, so a chain of a million co_awaits uses no stack.
//
// A Task knows the Executor that runs it (executor.hpp): a task spawned on
// one hands it, and its name, to every task it awaits, and the awaitables
// (awaitables.hpp) give the suspended task's handle back to it when it is to
// run again.
//
// A Task owns its coroutine frame: destroying the Task destroys the frame,
// finished or not, and with it every local of the suspended body, in the
// usual order. A Task destroyed while it is suspended inside a co_await of
// another Task destroys that one too (it is a local of the frame).
#pragma once

#include <coroutine>
#include <cstdint>
#include <exception>
#include <optional>
#include <type_traits>
#include <utility>

#include "fib/fatal.hpp"

namespace fib {

class Executor;

template <typename T = void>
class Task;

namespace detail {

// What every coroutine the Executor runs has in its promise: the Executor, and
// the name of the spawned task it runs for (for messages).
struct OnExecutor {
    Executor* executor = nullptr;  // nullptr: driven by hand, it may await no I/O
    const char* task = "a task";
    std::uint64_t root = 0;        // the spawned task's id (Executor::spawn)
};

// What every Task's promise has besides: who to resume at the end, and the exception.
struct TaskPromiseBase : OnExecutor {
    std::coroutine_handle<> continuation = std::noop_coroutine();
    std::exception_ptr error;

    std::suspend_always initial_suspend() noexcept { return {}; }
    // Resumes the awaiter (or nothing, if none) without growing the stack.
    struct FinalAwaiter {
        bool await_ready() noexcept { return false; }
        template <typename Promise>
        std::coroutine_handle<> await_suspend(std::coroutine_handle<Promise> done) noexcept {
            return done.promise().continuation;
        }
        void await_resume() noexcept {}
    };
    FinalAwaiter final_suspend() noexcept { return {}; }
    void unhandled_exception() noexcept { error = std::current_exception(); }
};

template <typename T>
struct TaskPromise : TaskPromiseBase {
    std::optional<T> value;
    Task<T> get_return_object() noexcept;
    template <typename U>
    void return_value(U&& result) { value.emplace(std::forward<U>(result)); }
    T take() {
        if (error) std::rethrow_exception(error);
        return std::move(*value);
    }
};

template <>
struct TaskPromise<void> : TaskPromiseBase {
    Task<void> get_return_object() noexcept;
    void return_void() noexcept {}
    void take() {
        if (error) std::rethrow_exception(error);
    }
};

}  // namespace detail

template <typename T>
class [[nodiscard]] Task {
public:
    using promise_type = detail::TaskPromise<T>;
    using Handle = std::coroutine_handle<promise_type>;

    explicit Task(Handle handle) noexcept : handle_(handle) {}
    Task(Task&& other) noexcept : handle_(std::exchange(other.handle_, {})) {}
    Task& operator=(Task&& other) noexcept {
        if (this != &other) {
            if (handle_) handle_.destroy();
            handle_ = std::exchange(other.handle_, {});
        }
        return *this;
    }
    ~Task() {
        if (handle_) handle_.destroy();
    }

    bool done() const { return !handle_ || handle_.done(); }

    // co_await task: start it, resume here when it ends.
    class Awaiter {
    public:
        explicit Awaiter(Handle task) noexcept : task_(task) {}
        bool await_ready() noexcept { return false; }
        // The task inherits the awaiting coroutine's Executor, and is what
        // runs next: await_suspend returns its handle (symmetric transfer).
        template <typename Promise>
        std::coroutine_handle<> await_suspend(std::coroutine_handle<Promise> awaiting) noexcept {
            task_.promise().continuation = awaiting;
            if constexpr (std::is_base_of_v<detail::OnExecutor, Promise>) {
                task_.promise().executor = awaiting.promise().executor;
                task_.promise().task = awaiting.promise().task;
                task_.promise().root = awaiting.promise().root;
            }
            return task_;
        }
        T await_resume() { return task_.promise().take(); }

    private:
        Handle task_;
    };
    // A Task is awaited once: an empty one (moved from) or one that has ended
    // (awaited before) stops the program.
    Awaiter operator co_await() && {
        if (!handle_) fatal("co_await on an empty Task (one that was moved from)");
        if (handle_.done()) fatal("co_await on a Task that has ended: a Task is awaited once");
        return Awaiter(handle_);
    }

    // For the executor and the bridges (executor.hpp): the frame, not given up.
    Handle handle() const noexcept { return handle_; }

private:
    Handle handle_;
};

namespace detail {
template <typename T>
Task<T> TaskPromise<T>::get_return_object() noexcept {
    return Task<T>(std::coroutine_handle<TaskPromise<T>>::from_promise(*this));
}
inline Task<void> TaskPromise<void>::get_return_object() noexcept {
    return Task<void>(std::coroutine_handle<TaskPromise<void>>::from_promise(*this));
}
}  // namespace detail

}  // namespace fib
