// readable_for.hpp — lesson 10, exercise 4: await an fd with a deadline.
//
//   short revents = co_await readable_for(fd, 50ms);   // in a task: POLLIN (...), or 0
//
// Suspends the task until `fd` is readable or `timeout` has passed, whichever
// comes first, and resumes it once: with poll's revents, or with 0 when the
// deadline came first. Whichever fires second must not resume the task again,
// and neither registration may outlive the await: not after either fired, and
// not when the task is destroyed while it waits.
// The fibers' version of this is lesson 6's wait_any with a deadline.
#pragma once

#include <poll.h>

#include <coroutine>

#include "fib/awaitables.hpp"

class ReadableFor {
public:
    ReadableFor(int fd, fib::Clock::duration timeout) : fd_(fd), timeout_(timeout) {}
    ReadableFor(const ReadableFor&) = delete;
    ReadableFor& operator=(const ReadableFor&) = delete;

    // As shipped: never suspends, and reports that nothing came.
    bool await_ready() const noexcept { return true; }
    template <typename Promise>
    void await_suspend(std::coroutine_handle<Promise>) {}
    short await_resume() const noexcept { return 0; }

private:
    int fd_;
    fib::Clock::duration timeout_;
};

inline ReadableFor readable_for(int fd, fib::Clock::duration timeout) { return ReadableFor(fd, timeout); }
