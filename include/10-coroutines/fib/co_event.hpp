// co_event.hpp — lesson 10: co::Event, luncliff's awaitable event on an eventfd
// ("Awaitable event using the coroutine, epoll, and eventfd", in the root README's Sources).
//
//   fib::co::Event done;
//   std::thread worker([&] { compute(); done.set(); });   // any thread
//   co_await done;                                        // a task: resumes once set
//
// Exactly the article's two states. co_await on a signaled Event does not
// suspend at all, and resets it; co_await on a non-signaled one suspends the
// task until set(), and resets it as the task resumes. set() on a signaled
// Event changes nothing: sets are not counted.
//
// The state is the eventfd's counter: set() writes 1 to it, from any thread
// or a signal handler (write(2) is async-signal-safe); a co_await reads it,
// which returns the count and zeroes it (no EFD_SEMAPHORE), or fails with
// EAGAIN when it is 0 (EFD_NONBLOCK). A task that must wait registers the
// eventfd with the Waiter like any fd (awaitables.hpp), so a set() from
// another thread wakes it through poll/epoll.
//
// As the article's event, it is final and neither copied nor moved: a suspended
// task's registration holds its fd, and the awaiter holds its address. One
// task at a time may wait on it (a second stops the program).
//
// Same name, other rules: lesson 6's fib::Event is for fibers, and its set()
// on the Event's own thread touches the fibers' queues, so a signal handler
// must call its set_through_eventfd() instead. This set() is always the
// eventfd's write, so it is safe anywhere, and it costs a system call every time.
#pragma once

#include <coroutine>

#include "fib/awaitables.hpp"
#include "fib/unique_fd.hpp"

namespace fib::co {

class Event final {
public:
    Event();   // non-signaled; throws std::system_error if there is no eventfd to be had
    ~Event();  // an Event a task waits on must not die: stops the program
    Event(const Event&) = delete;
    Event& operator=(const Event&) = delete;
    Event(Event&&) = delete;
    Event& operator=(Event&&) = delete;

    // Signals the Event, from any thread or a signal handler; keeps errno.
    void set() noexcept;
    // Resets the Event if it is signaled; true if it was. Never suspends.
    bool try_reset() noexcept;

    class Awaiter {
    public:
        explicit Awaiter(Event& event) : event_(event), readable_(event.eventfd_.get(), POLLIN) {}
        ~Awaiter() {
            if (suspended_) event_.awaited_ = false;
        }
        bool await_ready() noexcept { return event_.try_reset(); }
        template <typename Promise>
        void await_suspend(std::coroutine_handle<Promise> task) {
            event_.check_one_waiter();
            suspended_ = true;
            readable_.await_suspend(task);
        }
        void await_resume() noexcept { event_.try_reset(); }

    private:
        Event& event_;
        FdAwaiter readable_;
        bool suspended_ = false;
    };
    Awaiter operator co_await() noexcept { return Awaiter(*this); }

private:
    void check_one_waiter();

    UniqueFd eventfd_;
    bool awaited_ = false;  // a task is suspended on it
};

}  // namespace fib::co
