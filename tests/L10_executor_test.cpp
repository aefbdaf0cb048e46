// L10_executor_test.cpp — lesson 10: tasks on the Executor and the fibers' reactor. Order of
// resumption, waits on fds and deadlines, tasks destroyed while suspended (locals destroyed,
// registrations withdrawn), fibers and tasks taking turns on one thread, and misuse.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "L10_pipe.hpp"
#include "fib/awaitables.hpp"
#include "fib/executor.hpp"
#include "fib/fiber.hpp"
#include "fib/io.hpp"
#include "fib/task.hpp"
#include "fib/unique_fd.hpp"
#include "fib/waiter.hpp"

using namespace std::chrono_literals;

namespace {

struct Counted {
    int& alive;
    explicit Counted(int& count) : alive(count) { ++alive; }
    ~Counted() { --alive; }
};

fib::Task<void> log_steps(std::vector<std::string>& log, std::string name, int steps) {
    for (int i = 0; i < steps; ++i) {
        log.push_back(name + std::to_string(i));
        co_await fib::co::yield();
    }
}

TEST(L10_Executor, SpawnedTasksRunInOrderAndYieldTakesTurns) {
    fib::FiberManager manager;
    std::vector<std::string> log;
    fib::Executor executor;
    executor.spawn(log_steps(log, "a", 3));
    executor.spawn(log_steps(log, "b", 2));
    executor.wait();
    EXPECT_EQ(log, (std::vector<std::string>{"a0", "b0", "a1", "b1", "a2"}));
    EXPECT_EQ(executor.stats().tasks, 0u);
    EXPECT_EQ(executor.stats().spawned, 2u);
}

fib::Task<void> child(std::vector<int>& children, int index) {
    children.push_back(index);
    co_return;
}

// Each parent spawns a child and yields: two handles are queued for each one taken, and the
// queue grows while it is being drained. Children and parents each run in spawn order.
fib::Task<void> parent(fib::Executor& executor, std::vector<int>& parents, std::vector<int>& children, int index) {
    executor.spawn(child(children, index));
    co_await fib::co::yield();
    parents.push_back(index);
}

TEST(L10_Executor, TheReadyQueueStaysFirstInFirstOutWhileTasksSpawnTasks) {
    fib::FiberManager manager;
    fib::Executor executor;
    std::vector<int> parents, children, expected;
    for (int i = 0; i < 60; ++i) {
        executor.spawn(parent(executor, parents, children, i));
        expected.push_back(i);
    }
    executor.wait();
    EXPECT_EQ(children, expected);
    EXPECT_EQ(parents, expected);
}

fib::Task<void> read_one(int fd, std::string& got, short& revents) {
    revents = co_await fib::co::readable(fd);
    char byte = 0;
    if (::read(fd, &byte, 1) == 1) got += byte;
}

TEST(L10_Executor, ATaskWaitsForAnFdAndAFiberWritingItWakesIt) {
    fib::FiberManager manager;
    fib::Waiter waiter;
    fib::Executor executor;
    Pipe pipe;
    std::string got;
    short revents = 0;
    executor.spawn(read_one(pipe.read.get(), got, revents));
    fib::this_fiber::yield();  // the task runs to its co_await
    EXPECT_EQ(waiter.stats().waiting, 1u);
    EXPECT_EQ(got, "");
    fib::io::write_all(pipe.write.get(), "x", 1);
    executor.wait();
    EXPECT_EQ(got, "x");
    EXPECT_EQ(revents, POLLIN);
    EXPECT_EQ(waiter.stats().waiting, 0u);
}

fib::Task<void> write_when_writable(int fd, int& written) {
    // A socket's send buffer fills; writable() resumes the task once the peer reads.
    const std::string chunk(4096, 'w');
    for (;;) {
        const ssize_t n = ::send(fd, chunk.data(), chunk.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
        if (n > 0) {
            written += static_cast<int>(n);
            continue;
        }
        co_await fib::co::writable(fd);
        co_return;
    }
}

TEST(L10_Executor, WritableResumesATaskOnceTheSendBufferHasRoom) {
    fib::FiberManager manager;
    fib::Waiter waiter;
    fib::Executor executor;
    int pair[2];
    ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, pair), 0);
    const fib::UniqueFd a(pair[0]), b(pair[1]);
    int written = 0;
    executor.spawn(write_when_writable(a.get(), written));
    fib::this_fiber::yield();
    EXPECT_GT(written, 0);
    EXPECT_EQ(executor.stats().tasks, 1u);  // suspended: the buffer is full
    std::vector<char> sink(written);
    for (int taken = 0; taken < written;) {
        const ssize_t n = fib::io::read(b.get(), sink.data(), sink.size());
        ASSERT_GT(n, 0);
        taken += static_cast<int>(n);
    }
    executor.wait();
    EXPECT_EQ(executor.stats().tasks, 0u);
}

fib::Task<void> sleep_and_log(std::vector<int>& log, int ms) {
    co_await fib::co::sleep_for(std::chrono::milliseconds(ms));
    log.push_back(ms);
}

TEST(L10_Executor, SleepingTasksWakeInDeadlineOrder) {
    fib::FiberManager manager;
    fib::Waiter waiter;
    fib::Executor executor;
    std::vector<int> log;
    for (int ms : {30, 10, 20, 0}) executor.spawn(sleep_and_log(log, ms));
    executor.wait();
    EXPECT_EQ(log, (std::vector<int>{0, 10, 20, 30}));
    EXPECT_EQ(waiter.timers().size(), 0u);
}

TEST(L10_Executor, ASleepThatIsAlreadyDueDoesNotSuspend) {
    fib::FiberManager manager;
    fib::Waiter waiter;
    fib::Executor executor;
    std::vector<int> log;
    executor.spawn(sleep_and_log(log, 0));
    executor.wait();
    EXPECT_EQ(executor.stats().resumes, 1u);  // the first resume ran it to its end
}

fib::Task<void> sleep_the_shortest(int& sleeps) {
    co_await fib::co::sleep_for(fib::Clock::duration::min());
    ++sleeps;
    co_await fib::co::sleep_for(std::chrono::nanoseconds::min());
    ++sleeps;
    co_await fib::co::sleep_for(-std::chrono::hours(2'562'047));
    ++sleeps;
    co_await fib::co::sleep_until(fib::Clock::time_point::min());
    ++sleeps;
}

// The shortest timeouts (down to Clock::duration::min()) and the earliest deadline have passed
// already: none suspends, so one resume runs the task to its end and no timer is ever set.
TEST(L10_Executor, SleepsWithTheShortestTimeoutsDoNotSuspend) {
    fib::FiberManager manager;
    fib::Waiter waiter;
    fib::Executor executor;
    int sleeps = 0;
    executor.spawn(sleep_the_shortest(sleeps));
    executor.wait();
    EXPECT_EQ(sleeps, 4);
    EXPECT_EQ(executor.stats().resumes, 1u);
    EXPECT_EQ(waiter.stats().fibers_started, 0u);
    EXPECT_EQ(waiter.timers().size(), 0u);
}

fib::Task<void> hold_then_read(int fd, int& alive, bool& finished) {
    const Counted local(alive);
    co_await fib::co::readable(fd);
    finished = true;
}

fib::Task<void> hold_then_sleep(int& alive, bool& finished) {
    const Counted local(alive);
    co_await fib::co::sleep_for(1h);
    finished = true;
}

// The registration a destroyed awaiter leaves would call back into a freed frame: writing
// to the pipe afterwards would resume it (ASan: heap-use-after-free) or crash.
TEST(L10_Executor, CancelAllDestroysSuspendedTasksAndWithdrawsTheirWaits) {
    fib::FiberManager manager;
    fib::Waiter waiter;
    fib::Executor executor;
    Pipe pipe;
    int alive = 0;
    bool finished = false;
    executor.spawn(hold_then_read(pipe.read.get(), alive, finished));
    executor.spawn(hold_then_sleep(alive, finished));
    fib::this_fiber::yield();
    EXPECT_EQ(alive, 2);
    EXPECT_EQ(waiter.stats().waiting, 1u);
    EXPECT_EQ(waiter.timers().size(), 1u);
    executor.cancel_all();
    EXPECT_EQ(alive, 0);
    EXPECT_EQ(waiter.stats().waiting, 0u);
    EXPECT_EQ(waiter.timers().size(), 0u);
    fib::io::write_all(pipe.write.get(), "x", 1);
    manager.wait_for_all();
    EXPECT_FALSE(finished);
    EXPECT_EQ(executor.stats().tasks, 0u);
}

fib::Task<void> ping(int in, int out, int rounds, int& count) {
    char byte = 0;
    for (int i = 0; i < rounds; ++i) {
        co_await fib::co::readable(in);
        if (::read(in, &byte, 1) != 1) co_return;
        ++count;
        fib::io::write_all(out, &byte, 1);
    }
}

// A task and a fiber pass one byte back and forth through two pipes: each side waits on the
// same Waiter, one with co_await, the other parked; a lost wake-up hangs (the watchdog).
TEST(L10_Executor, ATaskAndAFiberTakeTurnsTenThousandTimesOnOneThread) {
    fib::FiberManager manager;
    fib::Waiter waiter;
    fib::Executor executor;
    Pipe to_task, to_fiber;
    int task_count = 0, fiber_count = 0;
    constexpr int kRounds = 10000;
    executor.spawn(ping(to_task.read.get(), to_fiber.write.get(), kRounds, task_count));
    fib::Fiber fiber([&] {
        char byte = 'p';
        for (int i = 0; i < kRounds; ++i) {
            fib::io::write_all(to_task.write.get(), &byte, 1);
            if (fib::io::read(to_fiber.read.get(), &byte, 1) != 1) return;
            ++fiber_count;
        }
    });
    fiber.join();
    executor.wait();
    EXPECT_EQ(task_count, kRounds);
    EXPECT_EQ(fiber_count, kRounds);
}

fib::Task<void> wait_on_socket(int fd, int& resumed) {
    co_await fib::co::readable(fd);
    ++resumed;
}

TEST(L10_Executor, AThousandTasksEachWaitingOnItsOwnSocketAllResume) {
    fib::FiberManager manager;
    fib::Waiter waiter;
    fib::Executor executor;
    std::vector<fib::UniqueFd> ours, theirs;
    int resumed = 0;
    for (int i = 0; i < 1000; ++i) {
        int pair[2];
        ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, pair), 0);
        ours.emplace_back(pair[0]);
        theirs.emplace_back(pair[1]);
        executor.spawn(wait_on_socket(pair[0], resumed));
    }
    fib::this_fiber::yield();
    EXPECT_EQ(waiter.stats().waiting, 1000u);
    for (std::size_t i = theirs.size(); i-- > 0;) fib::io::write_all(theirs[i].get(), "x", 1);
    executor.wait();
    EXPECT_EQ(resumed, 1000);
    EXPECT_EQ(executor.stats().fibers_started, 1u);  // one fiber served them all
}

TEST(L10_Executor, TheExecutorsFiberEndsWhenNoTaskIsLeftAndStartsAgainForTheNext) {
    fib::FiberManager manager;
    std::vector<std::string> log;
    fib::Executor executor;
    executor.spawn(log_steps(log, "a", 1));
    manager.wait_for_all();  // returns: the Executor's fiber ended with its last task
    executor.spawn(log_steps(log, "b", 1));
    manager.wait_for_all();
    EXPECT_EQ(log, (std::vector<std::string>{"a0", "b0"}));
    EXPECT_EQ(executor.stats().fibers_started, 2u);
}

// ---- Misuse: each ends the program with a message that says what and where.
fib::Task<void> throws_out() {
    throw std::runtime_error("out of the task");
    co_return;
}

fib::Task<void> awaits_readable(int fd) { co_await fib::co::readable(fd); }

fib::Task<void> calls_wait(fib::Executor& executor) {
    executor.wait();
    co_return;
}

TEST(L10_ExecutorDeathTest, AnExceptionThatLeavesASpawnedTaskNamesIt) {
    EXPECT_DEATH(({
                     fib::FiberManager manager;
                     fib::Executor executor;
                     executor.spawn(throws_out(), "thrower");
                     executor.wait();
                 }),
                 "task 'thrower' ended with an exception nobody caught: out of the task");
}

TEST(L10_ExecutorDeathTest, AwaitingAnFdInATaskNoExecutorRunsSaysSo) {
    EXPECT_DEATH(({
                     fib::FiberManager manager;
                     fib::Waiter waiter;
                     fib::Task<void> task = awaits_readable(0);
                     task.handle().resume();
                 }),
                 "co_await readable\\(\\)/writable\\(\\) in a coroutine that no Executor runs");
}

TEST(L10_ExecutorDeathTest, WaitingForTheExecutorFromOneOfItsTasksIsRefused) {
    EXPECT_DEATH(({
                     fib::FiberManager manager;
                     fib::Executor executor;
                     executor.spawn(calls_wait(executor));
                     manager.wait_for_all();
                 }),
                 "Executor::wait\\(\\) was called from a task .*call it from another fiber");
}

TEST(L10_ExecutorDeathTest, ScheduleFromAnotherThreadIsRefused) {
    EXPECT_DEATH(({
                     fib::FiberManager manager;
                     fib::Executor executor;
                     std::thread([&] { executor.schedule(std::noop_coroutine()); }).join();
                 }),
                 "Executor::schedule\\(\\) was called from another thread.*co::Event::set");
}

TEST(L10_ExecutorDeathTest, TwoTasksReadingOneFdAreStoppedNamingTheExecutorsFiber) {
    EXPECT_DEATH(({
                     fib::FiberManager manager;
                     fib::Waiter waiter;
                     fib::Executor executor;
                     Pipe pipe;
                     executor.spawn(awaits_readable(pipe.read.get()));
                     executor.spawn(awaits_readable(pipe.read.get()));
                     manager.wait_for_all();
                 }),
                 "\\(executor\\) waits to read fd [0-9]+, which fiber [0-9]+ \\(executor\\) already waits to read");
}

// A task's frame is on the heap, but what it calls runs on the stack of the fiber that
// resumed it, the Executor's: a deep recursion there meets that stack's guard (lesson 2).
__attribute__((noinline)) int recurse(int depth, volatile char* caller_frame) {
    volatile char frame[64];
    frame[0] = static_cast<char>(caller_frame[0] + 1);
    if (depth >= 1'000'000) return frame[0];
    return recurse(depth + 1, frame) + frame[0];
}

fib::Task<void> recurse_deeply() {
    volatile char seed = 0;
    recurse(0, &seed);
    co_return;
}

TEST(L10_ExecutorDeathTest, ADeepRecursionInATaskOverflowsTheExecutorsFiberStackAndIsNamed) {
    EXPECT_DEATH(({
                     fib::FiberManager manager;
                     fib::Executor executor;
                     executor.spawn(recurse_deeply());
                     executor.wait();
                 }),
                 "stack overflow in fiber [0-9]+ \\(executor\\): its stack is 65536 bytes");
}

fib::Task<void> never_resumed() { co_await std::suspend_always{}; }

TEST(L10_ExecutorDeathTest, TasksSuspendedOnNothingAreADeadlockThatNamesTheExecutor) {
    EXPECT_DEATH(({
                     fib::FiberManager manager;
                     fib::Executor executor;
                     executor.spawn(never_resumed());
                     executor.wait();
                 }),
                 "\\(executor\\): in Executor: no task is ready(.|\n)*deadlock");
}

}  // namespace
