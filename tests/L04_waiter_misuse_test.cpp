// L04_waiter_misuse_test.cpp — lesson 4: misuse of the Waiter, and a deadlock while nobody
// waits for an fd, stop the program with a clear message: death tests that match it. Two fibers reading
// one fd, a wait for no events, I/O that must wait on a thread with no Waiter, a second Waiter.
#include <gtest/gtest.h>
#include <poll.h>
#include <unistd.h>

#include "L02_schedule.hpp"
#include "L04_waiter_harness.hpp"
#include "fib/condvar.hpp"
#include "fib/fiber.hpp"
#include "fib/io.hpp"
#include "fib/waiter.hpp"

namespace {

using namespace l04_waiter;

// Main waits on a CondVar nobody notifies, and no fiber waits for an fd: the Waiter's fiber
// has nothing to do and is not running, so nothing can ever wake main.
void main_waits_forever_beside_an_idle_waiter() {
    fib::FiberManager manager;
    fib::Waiter waiter;
    fib::CondVar never;
    never.wait();
}

void two_fibers_wait_to_read_one_fd() {
    fib::FiberManager manager;
    fib::Waiter waiter;
    Pair pipe = make_fds();
    const int fd = pipe.first.get();
    fib::Fiber first({.name = "first"}, [&] { waiter.wait(fd, POLLIN); });
    fib::Fiber second({.name = "second"}, [&] { waiter.wait(fd, POLLIN); });
    first.join();
}

void wait_for_no_events() {
    fib::FiberManager manager;
    fib::Waiter waiter;
    waiter.wait(0, 0);
}

void read_an_empty_pipe_with_no_waiter() {
    fib::FiberManager manager;
    char byte;
    fib::io::read(make_fds().first.get(), &byte, 1);
}

void second_waiter_on_one_thread() {
    fib::FiberManager manager;
    fib::Waiter first;
    fib::Waiter second;
}

// Main returns while a detached fiber waits on a pipe nobody will write: only the kernel could
// wake it, and ~Waiter would wait for it for ever. It stops, naming the fiber and its fd (the
// alarm bounds the test if it hangs instead).
void main_returns_while_a_fiber_waits_on_a_pipe() {
    fib::FiberManager manager;
    Pair pipe = make_fds();  // outlives the Waiter: its close would wake the fiber
    fib::Waiter waiter;
    fib::Fiber({.name = "forgotten"}, [&] { waiter.wait(pipe.first.get(), POLLIN); }).detach();
    fib::this_fiber::yield();
    ::alarm(5);
}

TEST(L04_WaiterDeathTest, DestroyingTheWaiterWhileAFiberWaitsOnAnFdStopsNamingIt) {
    EXPECT_DEATH(main_returns_while_a_fiber_waits_on_a_pipe(),
                 "fib: the Waiter is being destroyed while these fibers wait on fds, and only the "
                 "kernel could wake them:\n"
                 "  fiber 1 \\(forgotten\\): waits to read fd [0-9]+\n"
                 "fib: fatal: the Waiter was destroyed with fibers still waiting on fds");
}

TEST(L04_WaiterDeathTest, DeadlockWithNoFdWaitedOnIsReportedNotHung) {
    EXPECT_DEATH(main_waits_forever_beside_an_idle_waiter(),
                 "fib: deadlock: no fiber is ready to run, and these are blocked:\n"
                 "  fiber 0 \\(main\\): in CondVar::wait, on 0x[0-9a-f]+\n"
                 "fib: fatal: deadlock");
}

TEST(L04_WaiterDeathTest, TwoFibersWaitingToReadOneFdStops) {
    EXPECTS_FIFO_ORDER();
    EXPECT_DEATH(two_fibers_wait_to_read_one_fd(),
                 "fib: fatal: fiber 2 \\(second\\) waits to read fd [0-9]+, which fiber 1 "
                 "\\(first\\) already waits to read; one fiber per direction per fd");
}

TEST(L04_WaiterDeathTest, WaitWithNoEventsStops) {
    EXPECT_DEATH(wait_for_no_events(),
                 "fib: fatal: fiber 0 \\(main\\) called Waiter::wait\\(fd 0, events 0x0\\): "
                 "need fd >= 0");
}

TEST(L04_WaiterDeathTest, IoReadThatMustWaitOnAThreadWithNoWaiterStops) {
    EXPECT_DEATH(read_an_empty_pipe_with_no_waiter(),
                 "fib: fatal: fib::io::read\\(\\) had to wait on a thread with no Waiter");
}

TEST(L04_WaiterDeathTest, SecondWaiterOnOneThreadStops) {
    EXPECT_DEATH(second_waiter_on_one_thread(),
                 "fib: fatal: a second Waiter was created on a thread that already has one");
}

}  // namespace
