// demo_cancel.cpp — lesson 6 demo, part 3: cancelling fibers blocked in three kinds of wait.
//
// A reader waits on a pipe nobody writes to, a sleeper sleeps for an hour,
// and a third fiber waits on a CondVar nobody notifies. main cancels all
// three: each wait returns at once with its own result, each fiber prints it
// and ends, and nothing is left behind in the Waiter or the timer heap.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>

#include "demo_parts.hpp"
#include "fib/condvar.hpp"
#include "fib/fiber.hpp"
#include "fib/io.hpp"
#include "fib/timer.hpp"
#include "fib/waiter.hpp"

using namespace std::chrono_literals;

bool cancel_demo() {
    fib::FiberManager manager;
    fib::Waiter waiter;
    int pipe_fds[2];
    if (::pipe2(pipe_fds, O_NONBLOCK | O_CLOEXEC) < 0) return false;
    fib::CondVar never;
    int results = 0;
    fib::Fiber reader({.name = "reader"}, [&] {
        char byte;
        const ssize_t n = fib::io::read(pipe_fds[0], &byte, 1);
        std::printf("cancel: reader  -> io::read returned %zd: %s\n", n, std::strerror(errno));
        results += n == -1 && errno == ECANCELED;
    });
    fib::Fiber sleeper({.name = "sleeper"}, [&] {
        const bool slept = fib::sleep_for(1h);
        std::printf("cancel: sleeper -> sleep_for(1h) returned %s\n", slept ? "true" : "false");
        results += !slept;
    });
    fib::Fiber patient({.name = "patient"}, [&] {
        const fib::WaitResult result = fib::wait_for(never, fib::Clock::duration::max());
        std::printf("cancel: patient -> wait_for returned %s\n",
                    result.cancelled() ? "cancelled()" : "something else");
        results += result.cancelled();
    });
    fib::this_fiber::yield();  // each one starts and blocks
    std::printf("cancel: 3 fibers blocked: %zu in the Waiter, %zu timers\n", waiter.stats().waiting,
                fib::TimerHeap::of_this_thread().size());
    reader.cancel(), sleeper.cancel(), patient.cancel();
    reader.join(), sleeper.join(), patient.join();
    std::printf("cancel: all joined: %zu in the Waiter, %zu timers\n", waiter.stats().waiting,
                fib::TimerHeap::of_this_thread().size());
    ::close(pipe_fds[0]);
    ::close(pipe_fds[1]);
    return results == 3 && waiter.stats().waiting == 0 &&
           fib::TimerHeap::of_this_thread().size() == 0;
}
