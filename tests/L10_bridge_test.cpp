// L10_bridge_test.cpp — lesson 10: fibers waiting for tasks (run_and_wait) and tasks waiting
// for fibers (in_fiber): values, exceptions, a wait inside a callback, and what happens when
// one side goes away first.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <stdexcept>
#include <string>
#include <vector>

#include "L02_schedule.hpp"
#include "fib/awaitables.hpp"
#include "fib/bridge.hpp"
#include "fib/executor.hpp"
#include "fib/fiber.hpp"
#include "fib/io.hpp"
#include "fib/task.hpp"
#include "fib/unique_fd.hpp"
#include "fib/waiter.hpp"

using namespace std::chrono_literals;

namespace {

fib::Task<int> sum_after_yields(int n) {
    int sum = 0;
    for (int i = 1; i <= n; ++i) {
        co_await fib::co::yield();
        sum += i;
    }
    co_return sum;
}

fib::Task<int> fails_after_a_yield() {
    co_await fib::co::yield();
    throw std::runtime_error("task failed");
}

TEST(L10_Bridge, AFiberGetsATasksValueAndItsException) {
    fib::FiberManager manager;
    fib::Executor executor;
    int value = 0;
    std::string error;
    fib::Fiber fiber([&] {
        value = fib::co::run_and_wait(executor, sum_after_yields(10));
        try {
            fib::co::run_and_wait(executor, fails_after_a_yield());
        } catch (const std::runtime_error& thrown) {
            error = thrown.what();
        }
    });
    fiber.join();
    EXPECT_EQ(value, 55);
    EXPECT_EQ(error, "task failed");
}

TEST(L10_Bridge, AFiberWhoseTaskIsDestroyedGetsAnExceptionNotAHang) {
    fib::FiberManager manager;
    fib::Waiter waiter;
    fib::Executor executor;
    std::string error;
    fib::Fiber fiber([&] {
        try {
            fib::co::run_and_wait(executor, [](int) -> fib::Task<int> {
                co_await fib::co::sleep_for(1h);
                co_return 1;
            }(0));
        } catch (const std::runtime_error& thrown) {
            error = thrown.what();
        }
    });
    fib::this_fiber::yield();
    fib::this_fiber::yield();
    executor.cancel_all();
    fiber.join();
    EXPECT_NE(error.find("destroyed before it ended"), std::string::npos) << error;
}

// The callback passed to std::for_each knows nothing of coroutines; a fiber can park inside it.
fib::Task<int> count_ready(const std::array<int, 3>& fds) {
    co_return co_await fib::co::in_fiber([&fds] {
        int ready = 0;
        std::for_each(fds.begin(), fds.end(), [&ready](int fd) { ready += fib::io::wait(fd, POLLIN) == POLLIN; });
        return ready;
    });
}

TEST(L10_Bridge, ATaskHandsAWaitInsideACallbackToAFiber) {
    fib::FiberManager manager;
    fib::Waiter waiter;
    fib::Executor executor;
    std::array<fib::UniqueFd, 6> ends;
    std::array<int, 3> read_ends{};
    for (int i = 0; i < 3; ++i) {
        int fds[2];
        ASSERT_EQ(::pipe2(fds, O_CLOEXEC), 0);
        ends[2 * i].reset(fds[0]);
        ends[2 * i + 1].reset(fds[1]);
        read_ends[i] = fds[0];
    }
    int result = 0;
    fib::Fiber writer([&] {
        for (int i = 2; i >= 0; --i) {
            fib::this_fiber::yield();
            fib::io::write_all(ends[2 * i + 1].get(), "x", 1);
        }
    });
    result = fib::co::run_and_wait(executor, count_ready(read_ends));
    writer.join();
    EXPECT_EQ(result, 3);
}

fib::Task<void> join_worker(fib::Fiber& worker, std::vector<int>& log) {
    co_await fib::co::in_fiber([&worker] { worker.join(); });
    log.push_back(2);
}

// A fiber that exists already: the task waits for it through a fiber that joins it.
TEST(L10_Bridge, ATaskWaitsForAFiberThatAlreadyRuns) {
    fib::FiberManager manager;
    fib::Executor executor;
    std::vector<int> log;
    fib::Fiber worker([&log] {
        for (int i = 0; i < 3; ++i) fib::this_fiber::yield();
        log.push_back(1);
    });
    executor.spawn(join_worker(worker, log));
    executor.wait();
    EXPECT_EQ(log, (std::vector<int>{1, 2}));
}

fib::Task<std::string> fiber_throws() {
    co_return co_await fib::co::in_fiber([]() -> std::string { throw std::runtime_error("fiber failed"); });
}

TEST(L10_Bridge, AnExceptionInTheFiberReachesTheTask) {
    fib::FiberManager manager;
    fib::Executor executor;
    std::string error;
    try {
        fib::co::run_and_wait(executor, fiber_throws());
    } catch (const std::runtime_error& thrown) {
        error = thrown.what();
    }
    EXPECT_EQ(error, "fiber failed");
}

fib::Task<void> waits_in_fiber(int fd, bool& resumed, short& revents) {
    co_await fib::co::in_fiber([fd, &revents] { revents = fib::io::wait(fd, POLLIN); });
    resumed = true;
}

// Destroying the task cancels its fiber (its wait returns 0), joins it, and resumes nothing.
TEST(L10_Bridge, ATaskDestroyedWhileItsFiberWaitsCancelsAndJoinsTheFiber) {
    fib::FiberManager manager;
    fib::Waiter waiter;
    fib::Executor executor;
    int fds[2];
    ASSERT_EQ(::pipe2(fds, O_CLOEXEC), 0);
    const fib::UniqueFd read_end(fds[0]), write_end(fds[1]);
    bool resumed = false;
    short revents = -1;
    executor.spawn(waits_in_fiber(read_end.get(), resumed, revents));
    // The task starts its fiber, which parks in io::wait: two turns in FIFO order, any
    // number under a shuffled one (make test-shuffled).
    ASSERT_TRUE(fib_test::yield_until([&waiter] { return waiter.stats().waiting == 1u; }));
    executor.cancel_all();
    EXPECT_EQ(revents, 0);  // cancelled
    EXPECT_FALSE(resumed);
    EXPECT_EQ(waiter.stats().waiting, 0u);
    manager.wait_for_all();
}

fib::Task<int> calls_run_and_wait(fib::Executor& executor) {
    co_return fib::co::run_and_wait(executor, sum_after_yields(1));
}

TEST(L10_BridgeDeathTest, RunAndWaitFromATaskIsRefusedNotADeadlock) {
    EXPECT_DEATH(({
                     fib::FiberManager manager;
                     fib::Executor executor;
                     fib::co::run_and_wait(executor, calls_run_and_wait(executor));
                 }),
                 "co::run_and_wait\\(\\) was called from a task \\(on fiber [0-9]+ \\(executor\\)\\).*co_await the "
                 "task instead");
}

}  // namespace
