// L10_task_test.cpp — lesson 10: Task<T> alone, driven by hand: lazy, values and exceptions
// through co_await, a million nested co_awaits on no stack, and a Task destroyed unfinished
// destroying its locals; a Task awaited twice, or moved from, refused.
#include <gtest/gtest.h>

#include <coroutine>
#include <stdexcept>
#include <string>

#include "L01_sanitizers.hpp"
#include "fib/task.hpp"

namespace {

// Runs a Task that never waits on anything outside itself to its end, from plain code.
template <typename T>
T run_to_end(fib::Task<T> task) {
    auto handle = task.handle();
    handle.resume();
    EXPECT_TRUE(handle.done());
    return handle.promise().take();
}

fib::Task<int> answer(int& started) {
    ++started;
    co_return 42;
}

fib::Task<int> twice(int& started) { co_return 2 * co_await answer(started); }

fib::Task<int> fails() {
    throw std::runtime_error("the task failed");
    co_return 0;
}

fib::Task<std::string> catches() {
    try {
        co_await fails();
    } catch (const std::runtime_error& error) {
        co_return std::string("caught: ") + error.what();
    }
    co_return "not thrown";
}

fib::Task<long> depth(long n) {
    if (n == 0) co_return 0;
    co_return 1 + co_await depth(n - 1);
}

struct Counted {
    int& alive;
    explicit Counted(int& a) : alive(a) { ++alive; }
    ~Counted() { --alive; }
};

// Suspends for good at its first co_await: nothing ever resumes it.
struct Never {
    bool await_ready() noexcept { return false; }
    void await_suspend(std::coroutine_handle<>) noexcept {}
    void await_resume() noexcept {}
};

fib::Task<int> holds(int& alive) {
    Counted local(alive);
    co_await Never{};
    co_return 1;
}

fib::Task<int> holds_inner(int& alive) {
    Counted local(alive);
    co_return co_await holds(alive);
}

}  // namespace

TEST(L10_Task, ATaskDoesNothingUntilAwaited) {
    int started = 0;
    fib::Task<int> task = answer(started);
    EXPECT_EQ(started, 0);
    EXPECT_EQ(run_to_end(std::move(task)), 42);
    EXPECT_EQ(started, 1);
}

TEST(L10_Task, AValueComesBackThroughCoAwait) {
    int started = 0;
    EXPECT_EQ(run_to_end(twice(started)), 84);
}

TEST(L10_Task, AnExceptionReachesTheAwaiter) { EXPECT_EQ(run_to_end(catches()), "caught: the task failed"); }

// With -O2, each symmetric transfer is a tail call: a million nested co_awaits take no stack.
// Under make SAN=1 or TSAN=1 (-O1, instrumented) GCC 12 makes it an ordinary call, and each
// level takes a frame of the stack: there the chain is kept to 1,000 levels.
#if UNDER_A_SANITIZER
constexpr long kDepth = 1'000;
#else
constexpr long kDepth = 1'000'000;
#endif
TEST(L10_Task, AMillionNestedCoAwaitsUseNoStack) { EXPECT_EQ(run_to_end(depth(kDepth)), kDepth); }

TEST(L10_Task, ATaskDestroyedUnfinishedDestroysItsLocalsAndTheTaskItAwaits) {
    int alive = 0;
    {
        fib::Task<int> task = holds_inner(alive);
        task.handle().resume();  // runs until holds() parks in Never
        EXPECT_EQ(alive, 2);
        EXPECT_FALSE(task.done());
    }
    EXPECT_EQ(alive, 0);
}

namespace {

fib::Task<int> await_twice(fib::Task<int>& task) {
    co_await std::move(task);
    co_return co_await std::move(task);
}

fib::Task<int> await_moved_from(fib::Task<int>& task) {
    fib::Task<int> taken = std::move(task);
    co_return co_await std::move(task);
}

}  // namespace

TEST(L10_TaskDeathTest, AwaitingATaskTwiceStopsTheProgram) {
    EXPECT_DEATH(({
                     int started = 0;
                     fib::Task<int> task = answer(started);
                     run_to_end(await_twice(task));
                 }),
                 "co_await on a Task that has ended: a Task is awaited once");
}

TEST(L10_TaskDeathTest, AwaitingAMovedFromTaskStopsTheProgram) {
    EXPECT_DEATH(({
                     int started = 0;
                     fib::Task<int> task = answer(started);
                     run_to_end(await_moved_from(task));
                 }),
                 "co_await on an empty Task \\(one that was moved from\\)");
}
