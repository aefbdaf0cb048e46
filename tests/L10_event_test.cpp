// L10_event_test.cpp — lesson 10: co::Event, luncliff's two-state awaitable event. A signaled
// Event does not suspend and is reset; sets are not counted; a set from another thread and
// from a signal handler wakes the task through the eventfd; 20,000 rounds with another thread
// lose no wake-up; it can be neither copied nor moved; misuse stops the program.
#include <gtest/gtest.h>
#include <signal.h>

#include <atomic>
#include <cerrno>
#include <latch>
#include <semaphore>
#include <thread>
#include <type_traits>

#include "fib/co_event.hpp"
#include "fib/executor.hpp"
#include "fib/fiber.hpp"
#include "fib/task.hpp"
#include "fib/waiter.hpp"

namespace {

// The constraints of luncliff's event, at compile time (tests/L10_compile_fail/ shows the
// compiler's own refusal).
static_assert(std::is_final_v<fib::co::Event>);
static_assert(!std::is_copy_constructible_v<fib::co::Event> && !std::is_copy_assignable_v<fib::co::Event>);
static_assert(!std::is_move_constructible_v<fib::co::Event> && !std::is_move_assignable_v<fib::co::Event>);

fib::Task<void> await_event(fib::co::Event& event, int& passed) {
    co_await event;
    ++passed;
}

TEST(L10_Event, ASignaledEventDoesNotSuspendAndIsReset) {
    fib::FiberManager manager;
    fib::Waiter waiter;
    fib::Executor executor;
    fib::co::Event event;
    event.set();
    int passed = 0;
    executor.spawn(await_event(event, passed));
    executor.wait();
    EXPECT_EQ(passed, 1);
    EXPECT_EQ(executor.stats().resumes, 1u);  // run to its end at its first resume
    EXPECT_EQ(waiter.stats().fibers_started, 0u);  // nothing was ever registered
    EXPECT_FALSE(event.try_reset());              // and the co_await reset it
}

TEST(L10_Event, ANonSignaledEventSuspendsUntilSetAndIsResetAgain) {
    fib::FiberManager manager;
    fib::Waiter waiter;
    fib::Executor executor;
    fib::co::Event event;
    int passed = 0;
    executor.spawn(await_event(event, passed));
    fib::this_fiber::yield();
    EXPECT_EQ(passed, 0);
    EXPECT_EQ(waiter.stats().waiting, 1u);
    event.set();
    executor.wait();
    EXPECT_EQ(passed, 1);
    EXPECT_FALSE(event.try_reset());
}

fib::Task<void> await_twice(fib::co::Event& event, int& passed) {
    co_await event;
    ++passed;
    co_await event;
    ++passed;
}

TEST(L10_Event, SetsAreNotCounted) {
    fib::FiberManager manager;
    fib::Waiter waiter;
    fib::Executor executor;
    fib::co::Event event;
    event.set();
    event.set();
    int passed = 0;
    executor.spawn(await_twice(event, passed));
    fib::this_fiber::yield();
    EXPECT_EQ(passed, 1);  // two sets, one signal: the second co_await suspends
    EXPECT_EQ(waiter.stats().waiting, 1u);
    event.set();
    executor.wait();
    EXPECT_EQ(passed, 2);
}

TEST(L10_Event, ASetFromAnotherThreadWakesTheSuspendedTask) {
    fib::FiberManager manager;
    fib::Waiter waiter;
    fib::Executor executor;
    fib::co::Event event;
    int passed = 0;
    std::latch suspended(1);
    std::thread setter([&] {
        suspended.wait();
        event.set();
    });
    executor.spawn(await_event(event, passed));
    fib::this_fiber::yield();  // the task is suspended in its co_await now
    EXPECT_EQ(waiter.stats().waiting, 1u);
    suspended.count_down();
    executor.wait();
    setter.join();
    EXPECT_EQ(passed, 1);
}

fib::co::Event* handler_event = nullptr;
void set_from_handler(int) {
    errno = 0;
    handler_event->set();
}

TEST(L10_Event, ASetFromASignalHandlerWakesTheTaskAndKeepsErrno) {
    fib::FiberManager manager;
    fib::Waiter waiter;
    fib::Executor executor;
    fib::co::Event event;
    handler_event = &event;
    struct sigaction action {};
    action.sa_handler = set_from_handler;
    struct sigaction previous {};
    ASSERT_EQ(::sigaction(SIGUSR1, &action, &previous), 0);
    int passed = 0;
    executor.spawn(await_event(event, passed));
    fib::this_fiber::yield();
    errno = EAGAIN;
    ::raise(SIGUSR1);
    executor.wait();
    ::sigaction(SIGUSR1, &previous, nullptr);
    EXPECT_EQ(passed, 1);
}

fib::Task<void> answer_rounds(fib::co::Event& mine, std::binary_semaphore& theirs, int rounds, int& count) {
    for (int i = 0; i < rounds; ++i) {
        co_await mine;
        ++count;
        theirs.release();
    }
}

// The other thread sets the Event at any moment relative to the task's co_await: before it
// (no suspension), or while it is suspended. A wake-up lost between them hangs the test.
TEST(L10_Event, TwentyThousandRoundsWithAnotherThreadLoseNoWakeUp) {
    fib::FiberManager manager;
    fib::Waiter waiter;
    fib::Executor executor;
    fib::co::Event event;
    std::binary_semaphore answered(0);
    constexpr int kRounds = 20000;
    int count = 0;
    std::thread other([&] {
        for (int i = 0; i < kRounds; ++i) {
            event.set();
            answered.acquire();
        }
    });
    executor.spawn(answer_rounds(event, answered, kRounds, count));
    executor.wait();
    other.join();
    EXPECT_EQ(count, kRounds);
}

TEST(L10_EventDeathTest, AnEventDestroyedWhileATaskWaitsOnItStopsTheProgram) {
    EXPECT_DEATH(({
                     fib::FiberManager manager;
                     fib::Waiter waiter;
                     fib::Executor executor;
                     int passed = 0;
                     auto event = std::make_unique<fib::co::Event>();
                     executor.spawn(await_event(*event, passed));
                     fib::this_fiber::yield();
                     event.reset();
                 }),
                 "a co::Event was destroyed while a task waits on it");
}

TEST(L10_EventDeathTest, TwoTasksAwaitingOneEventAreRefused) {
    EXPECT_DEATH(({
                     fib::FiberManager manager;
                     fib::Waiter waiter;
                     fib::Executor executor;
                     fib::co::Event event;
                     int passed = 0;
                     executor.spawn(await_event(event, passed));
                     executor.spawn(await_event(event, passed));
                     executor.wait();
                 }),
                 "a second task awaits a co::Event; one task at a time may wait on it");
}

}  // namespace
