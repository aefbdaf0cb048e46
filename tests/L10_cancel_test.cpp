// L10_cancel_test.cpp — lesson 10: cancels and waits between fibers and tasks. A fiber in
// run_and_wait that is cancelled destroys the task and throws Cancelled (so a Cluster's stop
// reaches a thread whose main waits there); Executor::cancel drops the task's queued handles
// with its frame; a cancelled Executor::wait throws; ~Executor in a cancelled fiber still waits
// for the Executor's fiber; and a fiber's wait called from a task stops the program, naming
// the task and the wait, instead of parking the Executor's fiber mid-task.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <thread>
#include <vector>

#include "fib/awaitables.hpp"
#include "fib/bridge.hpp"
#include "fib/cancel.hpp"
#include "fib/cluster.hpp"
#include "fib/condvar.hpp"
#include "fib/executor.hpp"
#include "fib/fiber.hpp"
#include "fib/io.hpp"
#include "fib/offload.hpp"
#include "fib/task.hpp"
#include "fib/timer.hpp"
#include "fib/waiter.hpp"

using namespace std::chrono_literals;

namespace {

struct Home {
    fib::FiberManager manager;
    fib::Waiter waiter;
};

// Counts its destruction: the task's locals must go when the task does.
struct Guard {
    int& destroyed;
    ~Guard() { ++destroyed; }
};

fib::Task<int> sleeps_an_hour(int& destroyed) {
    const Guard guard{destroyed};
    co_await fib::co::sleep_for(1h);
    co_return 1;
}

TEST(L10_Cancel, ACancelledRunAndWaitDestroysTheTaskAndThrowsCancelled) {
    Home home;
    fib::Executor executor;
    int destroyed = 0;
    bool cancelled = false;
    fib::Fiber caller([&] {
        try {
            fib::co::run_and_wait(executor, sleeps_an_hour(destroyed));
        } catch (const fib::Cancelled&) {
            cancelled = true;
        }
    });
    for (int i = 0; i < 10 && fib::TimerHeap::of_this_thread().size() == 0; ++i) fib::this_fiber::yield();
    ASSERT_EQ(fib::TimerHeap::of_this_thread().size(), 1u);  // the task sleeps
    caller.cancel();
    caller.join();
    EXPECT_TRUE(cancelled);
    EXPECT_EQ(destroyed, 1);
    EXPECT_EQ(executor.stats().tasks, 0u);
    EXPECT_EQ(fib::TimerHeap::of_this_thread().size(), 0u);  // its sleep withdrawn
}

TEST(L10_Cancel, ARunAndWaitOfAFiberCancelledBeforeItRunsNothing) {
    Home home;
    fib::Executor executor;
    int destroyed = 0;
    bool cancelled = false;
    fib::Fiber caller([&] {
        fib::this_fiber::yield();
        try {
            fib::co::run_and_wait(executor, sleeps_an_hour(destroyed));
        } catch (const fib::Cancelled&) {
            cancelled = true;
        }
    });
    caller.cancel();
    caller.join();
    EXPECT_TRUE(cancelled);
    EXPECT_EQ(executor.stats().spawned, 0u);
    EXPECT_EQ(destroyed, 0);  // the Task was made and destroyed unstarted: its body never ran
}

fib::Task<void> yields_for_ever(long& resumes) {
    for (;;) {
        co_await fib::co::yield();
        ++resumes;
    }
}

fib::Task<void> awaits(fib::Task<void> inner) { co_await std::move(inner); }

// The nested task's handle sits in the ready queue (it yielded) when its root is cancelled:
// the handle must go with the frame, or the Executor would resume freed memory (ASan sees it).
TEST(L10_Cancel, CancellingATaskDropsItsQueuedHandlesWithItsFrame) {
    Home home;
    fib::Executor executor;
    long resumes = 0;
    const std::uint64_t id = executor.spawn(awaits(yields_for_ever(resumes)), "yielder");
    while (resumes < 3) fib::this_fiber::yield();  // each pass leaves its handle queued
    EXPECT_TRUE(executor.cancel(id));
    EXPECT_FALSE(executor.cancel(id));  // gone already
    const long resumes_at_cancel = resumes;
    // Another task keeps the Executor's fiber going through a few passes of its ready queue.
    long bystander = 0;
    executor.spawn([](long& count) -> fib::Task<void> {
        for (int i = 0; i < 3; ++i) {
            co_await fib::co::yield();
            ++count;
        }
    }(bystander), "bystander");
    executor.wait();
    EXPECT_EQ(bystander, 3);
    EXPECT_EQ(resumes, resumes_at_cancel);
    EXPECT_EQ(executor.stats().tasks, 0u);
}

TEST(L10_Cancel, ACancelledExecutorWaitThrowsCancelledAndTheTasksGoOn) {
    Home home;
    fib::Executor executor;
    int destroyed = 0;
    executor.spawn([](int& d) -> fib::Task<void> { co_await sleeps_an_hour(d); }(destroyed), "sleeper");
    bool cancelled = false;
    fib::Fiber waiting([&] {
        try {
            executor.wait();
        } catch (const fib::Cancelled&) {
            cancelled = true;
        }
    });
    for (int i = 0; i < 5; ++i) fib::this_fiber::yield();
    waiting.cancel();
    waiting.join();
    EXPECT_TRUE(cancelled);
    EXPECT_EQ(executor.stats().tasks, 1u);
    executor.cancel_all();
    EXPECT_EQ(destroyed, 1);
}

// ~Executor waits for the Executor's fiber to end; a cancel of the fiber running the
// destructor must not cut that short (it would throw out of a destructor).
TEST(L10_Cancel, AnExecutorDestroyedInACancelledFiberStillWaitsForItsFiber) {
    Home home;
    int destroyed = 0;
    bool slept = true;
    fib::Fiber owner([&] {
        fib::Executor executor;
        executor.spawn([](int& d) -> fib::Task<void> { co_await sleeps_an_hour(d); }(destroyed), "sleeper");
        slept = fib::sleep_for(1h);
    });
    for (int i = 0; i < 5; ++i) fib::this_fiber::yield();
    owner.cancel();
    owner.join();
    EXPECT_FALSE(slept);
    EXPECT_EQ(destroyed, 1);
}

fib::Task<int> says_so_and_sleeps_an_hour(int& destroyed, std::atomic<int>& asleep) {
    const Guard guard{destroyed};
    asleep.fetch_add(1);
    co_await fib::co::sleep_for(1h);
    co_return 1;
}

// A thread's main waits in run_and_wait when the cluster stops: the stop's cancel reaches it,
// and the task, which has run up to its sleep, is destroyed. (The stop waits for both tasks to
// have begun: a task that has not begun has no Guard to destroy.)
TEST(L10_Cancel, AClusterStopEndsAThreadWhoseMainWaitsInRunAndWait) {
    fib::Cluster cluster({.threads = 2});
    std::vector<int> cancelled(2, 0), destroyed(2, 0);
    std::atomic<int> asleep{0};
    cluster.start([&](std::size_t index) {
        fib::Executor executor;
        try {
            fib::co::run_and_wait(executor, says_so_and_sleeps_an_hour(destroyed[index], asleep));
        } catch (const fib::Cancelled&) {
            cancelled[index] = 1;
        }
    });
    for (int waited_ms = 0; asleep.load() < 2 && waited_ms < 10'000; ++waited_ms)
        std::this_thread::sleep_for(1ms);
    ASSERT_EQ(asleep.load(), 2);
    cluster.stop();
    cluster.join();
    EXPECT_EQ(cancelled, (std::vector<int>{1, 1}));
    EXPECT_EQ(destroyed, (std::vector<int>{1, 1}));
}

// ---- A fiber's wait called from a task.

// An hour: sleep_for returns at once, without the park these tests expect, once its deadline
// has passed, and under qemu-user on a busy machine 1 ms had (make ARCH=aarch64 test-lesson10).
fib::Task<void> calls_a_fiber_sleep() {
    fib::sleep_for(1h);
    co_return;
}

fib::Task<void> calls_a_fiber_read(int fd) {
    char byte;
    fib::io::read(fd, &byte, 1);
    co_return;
}

fib::Task<void> waits_on_a_condvar(fib::CondVar& never) {
    never.wait();
    co_return;
}

fib::Task<void> calls_offload(fib::ThreadPool& pool) {
    fib::offload(pool, [] { return 1; });
    co_return;
}

void run_task(fib::Task<void> task, const char* name) {
    Home home;
    fib::Executor executor;
    executor.spawn(std::move(task), name);
    executor.wait();
}

TEST(L10_CancelDeathTest, AFiberWaitInATaskStopsNamingTheTaskAndTheWait) {
    EXPECT_DEATH(run_task(calls_a_fiber_sleep(), "napper"),
                 "task 'napper' called sleep_for, a fiber's wait, which would park fiber [0-9]+ "
                 "\\(executor\\)");
    EXPECT_DEATH(
        {
            int pipe_fds[2];
            if (::pipe2(pipe_fds, O_NONBLOCK) != 0) std::abort();
            run_task(calls_a_fiber_read(pipe_fds[0]), "reader");
        },
        // (A Waiter that hands the read itself to the kernel names the read.)
        "task 'reader' called (Waiter::wait \\(read\\)|fib::io::read), a fiber's wait");
    EXPECT_DEATH(
        {
            fib::CondVar never;
            run_task(waits_on_a_condvar(never), "waiter");
        },
        "task 'waiter' called CondVar::wait, a fiber's wait");
    EXPECT_DEATH(
        {
            fib::ThreadPool pool(1);
            run_task(calls_offload(pool), "offloader");
        },
        "task 'offloader' called Offload::get, a fiber's wait");
}

// Nested: the message names the spawned task, whichever of its awaited tasks made the call.
fib::Task<void> outer_calls_inner() { co_await calls_a_fiber_sleep(); }

TEST(L10_CancelDeathTest, AFiberWaitInANestedTaskNamesTheSpawnedTask) {
    EXPECT_DEATH(run_task(outer_calls_inner(), "outer"), "task 'outer' called sleep_for");
}

}  // namespace
