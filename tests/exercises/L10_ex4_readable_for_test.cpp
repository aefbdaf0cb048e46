// L10_ex4_readable_for_test.cpp — lesson 10, exercise 4: co_await readable_for(fd, timeout)
// resumes the task once, with the revents when the fd is ready first and 0 when the deadline
// comes first, and leaves no registration behind: not after either, and not when the task is
// destroyed while it waits.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <unistd.h>

#include <chrono>

#include "L10_pipe.hpp"
#include "fib/executor.hpp"
#include "fib/fiber.hpp"
#include "fib/io.hpp"
#include "fib/timer.hpp"
#include "fib/unique_fd.hpp"
#include "fib/waiter.hpp"
#include "readable_for.hpp"

using namespace std::chrono_literals;

namespace {

fib::Task<void> await_for(int fd, fib::Clock::duration timeout, short& revents, int& resumed) {
    revents = co_await readable_for(fd, timeout);
    ++resumed;
}

TEST(L10_Ex4ReadableFor, AnFdReadyBeforeTheDeadlineResumesTheTaskWithItsRevents) {
    fib::FiberManager manager;
    fib::Waiter waiter;
    fib::Executor executor;
    Pipe pipe;
    short revents = -1;
    int resumed = 0;
    executor.spawn(await_for(pipe.read.get(), 1h, revents, resumed));
    fib::this_fiber::yield();
    EXPECT_EQ(resumed, 0);  // suspended: nothing to read yet
    EXPECT_EQ(waiter.stats().waiting, 1u);
    EXPECT_EQ(waiter.timers().size(), 1u);
    fib::io::write_all(pipe.write.get(), "x", 1);
    executor.wait();
    EXPECT_EQ(resumed, 1);
    EXPECT_EQ(revents, POLLIN);
    EXPECT_EQ(waiter.stats().waiting, 0u);
    EXPECT_EQ(waiter.timers().size(), 0u);  // the hour-long timer is gone with the await
}

TEST(L10_Ex4ReadableFor, TheDeadlineFirstResumesTheTaskWithZeroAndWithdrawsTheFdWait) {
    fib::FiberManager manager;
    fib::Waiter waiter;
    fib::Executor executor;
    Pipe pipe;
    short revents = -1;
    int resumed = 0;
    executor.spawn(await_for(pipe.read.get(), 20ms, revents, resumed));
    fib::this_fiber::yield();
    EXPECT_EQ(resumed, 0);
    EXPECT_EQ(waiter.stats().waiting, 1u);
    executor.wait();
    EXPECT_EQ(resumed, 1);
    EXPECT_EQ(revents, 0);
    EXPECT_EQ(waiter.stats().waiting, 0u);
    EXPECT_EQ(waiter.timers().size(), 0u);
    // A byte written now must resume nothing: the fd wait went with the await.
    fib::io::write_all(pipe.write.get(), "x", 1);
    manager.wait_for_all();
    EXPECT_EQ(resumed, 1);
}

// Both are due in one turn of the Waiter: the fd is ready and the deadline has passed when it
// looks. The first to fire must withdraw the other: the task is resumed once, not twice.
TEST(L10_Ex4ReadableFor, BothFiringInOneTurnResumeTheTaskOnce) {
    fib::FiberManager manager;
    fib::Waiter waiter;
    fib::Executor executor;
    Pipe pipe;
    short revents = -1;
    int resumed = 0;
    executor.spawn(await_for(pipe.read.get(), 1ms, revents, resumed));
    fib::this_fiber::yield();
    fib::io::write_all(pipe.write.get(), "x", 1);
    fib::sleep_for(5ms);  // parks main: the Waiter finds the fd ready and the deadline gone
    executor.wait();
    manager.wait_for_all();
    EXPECT_EQ(resumed, 1);
    EXPECT_EQ(executor.stats().resumes, 2u);  // the start, and one wake-up
}

TEST(L10_Ex4ReadableFor, ATaskDestroyedWhileWaitingLeavesNeitherRegistration) {
    fib::FiberManager manager;
    fib::Waiter waiter;
    fib::Executor executor;
    Pipe pipe;
    short revents = -1;
    int resumed = 0;
    executor.spawn(await_for(pipe.read.get(), 1h, revents, resumed));
    fib::this_fiber::yield();
    EXPECT_EQ(waiter.stats().waiting, 1u);
    executor.cancel_all();
    EXPECT_EQ(waiter.stats().waiting, 0u);
    EXPECT_EQ(waiter.timers().size(), 0u);
    EXPECT_EQ(resumed, 0);
}

}  // namespace
