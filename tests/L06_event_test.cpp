// L06_event_test.cpp — lesson 6: Event. A wait on a non-signaled Event suspends until set(); a
// wait on a signaled one does not suspend; both leave it non-signaled; sets are not counted;
// set() from another thread wakes the fiber through the Waiter, which sleeps meanwhile.
#include <gtest/gtest.h>
#include <poll.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <type_traits>

#include "L04_waiter_harness.hpp"
#include "fib/event.hpp"
#include "fib/waiter.hpp"

namespace {

using l04_waiter::in_system_call;

static_assert(!std::is_copy_constructible_v<fib::Event> &&
              !std::is_move_constructible_v<fib::Event>);
static_assert(!std::is_copy_assignable_v<fib::Event> && !std::is_move_assignable_v<fib::Event>);

TEST(L06_Event, WaitOnANonSignaledEventSuspendsUntilSetThenLeavesItNonSignaled) {
    fib::FiberManager manager;
    fib::Waiter waiter;
    fib::Event event;
    bool woken = false;
    fib::Fiber sleeper([&] {
        event.wait();
        woken = true;
    });
    for (int i = 0; i < 5; ++i) fib::this_fiber::yield();
    EXPECT_FALSE(woken);
    EXPECT_EQ(waiter.stats().waiting, 1u);
    event.set();
    sleeper.join();
    EXPECT_TRUE(woken);
    EXPECT_FALSE(event.try_wait());  // the wait reset it
}

TEST(L06_Event, WaitOnASignaledEventDoesNotSuspendAndResetsIt) {
    fib::FiberManager manager;
    fib::Waiter waiter;
    fib::Event event;
    event.set();
    const std::uint64_t switches = manager.stats().switches;
    event.wait();  // main, a fiber too
    EXPECT_EQ(manager.stats().switches, switches);
    EXPECT_EQ(waiter.stats().wakeups, 0u);
    EXPECT_FALSE(event.try_wait());
}

TEST(L06_Event, SetsAreNotCountedTwoSetsAreOneSignal) {
    fib::FiberManager manager;
    fib::Waiter waiter;
    fib::Event event;
    event.set();
    event.set();
    EXPECT_TRUE(event.try_wait());
    EXPECT_FALSE(event.try_wait());
}

// Main joins a fiber waiting on the Event, so the thread sleeps in the Waiter's poll or
// epoll_wait; another thread sees it sleep there, then sets the Event. One blocking call
// covers the whole wait: the set() wakes it, nothing polled for it.
TEST(L06_Event, SetFromAnotherThreadWakesTheFiberThroughTheSleepingWaiter) {
    fib::FiberManager manager;
    fib::Waiter waiter;
    fib::Event event;
    const pid_t main_tid = ::gettid();
    std::atomic<bool> slept{false}, waiting{false};
    // Not just any system call of main's: the Waiter's blocking one, after the fiber waits
    // (setting a Waiter up makes system calls too, and one caught there would set too early).
    std::thread setter([&] {
        for (int i = 0; i < 5000 && !(waiting && in_system_call(main_tid)); ++i)
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
        slept = in_system_call(main_tid);
        event.set();
    });
    fib::Fiber sleeper([&] {
        waiting = true;
        event.wait();
    });
    sleeper.join();
    setter.join();
    EXPECT_TRUE(slept);
    EXPECT_EQ(waiter.stats().blocking_polls, 1u);
    EXPECT_EQ(waiter.stats().wakeups, 1u);
}

// Many sets from another thread, each after the fiber is back waiting: every one wakes it.
TEST(L06_Event, AThousandHandOffsBetweenAThreadAndAFiber) {
    fib::FiberManager manager;
    fib::Waiter waiter;
    fib::Event to_fiber;
    std::atomic<int> acknowledged{0};
    constexpr int kRounds = 1000;
    std::thread setter([&] {
        for (int i = 0; i < kRounds; ++i) {
            to_fiber.set();
            // Bounded: a fiber that never wakes would otherwise hang the test run.
            const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
            while (acknowledged.load() <= i) {
                if (std::chrono::steady_clock::now() > give_up) {
                    std::fprintf(stderr, "the fiber missed set() number %d\n", i + 1);
                    std::abort();
                }
                std::this_thread::yield();
            }
        }
    });
    int woken = 0;
    fib::Fiber sleeper([&] {
        for (int i = 0; i < kRounds; ++i) {
            to_fiber.wait();
            ++woken;
            acknowledged.store(i + 1);
        }
    });
    sleeper.join();
    setter.join();
    EXPECT_EQ(woken, kRounds);
}

void two_fibers_wait_on_one_event() {
    fib::FiberManager manager;
    fib::Waiter waiter;
    fib::Event event;
    fib::Fiber first([&] { event.wait(); });
    fib::Fiber second([&] { event.wait(); });
    first.join();
}

TEST(L06_EventDeathTest, TwoFibersWaitingOnOneEventStop) {
    EXPECT_DEATH(two_fibers_wait_on_one_event(), "already waits on; one fiber at a time may");
}

// set() on the Event's own thread wakes its fiber without a system call: the eventfd never
// turns readable, yet the fiber wakes and the Event reads as set. Through the kernel instead
// (set_through_eventfd), the eventfd is readable until the Event is reset.
TEST(L06_Event, ASetOnItsOwnThreadWakesTheFiberWithoutTouchingTheEventfd) {
    fib::FiberManager manager;
    fib::Waiter waiter;
    fib::Event event;
    auto eventfd_readable = [&] {
        pollfd look{event.fd(), POLLIN, 0};
        return ::poll(&look, 1, 0) == 1;
    };
    int woken = 0;
    fib::Fiber sleeper([&] {
        for (int i = 0; i < 2; ++i) woken += event.wait();
    });
    for (int i = 0; i < 3; ++i) fib::this_fiber::yield();
    event.set();
    EXPECT_FALSE(eventfd_readable());
    for (int i = 0; i < 3 && woken < 1; ++i) fib::this_fiber::yield();
    EXPECT_EQ(woken, 1);
    EXPECT_EQ(waiter.stats().wakeups, 0u);  // the Waiter had nothing to do with it
    event.set_through_eventfd();
    EXPECT_TRUE(eventfd_readable());
    sleeper.join();
    EXPECT_EQ(woken, 2);
    EXPECT_FALSE(eventfd_readable());
}

// set_through_eventfd() runs in signal handlers, which must leave errno alone. A write that
// fails (here the eventfd's counter is full: EAGAIN) must not leak its errno to the
// interrupted code; the Event is signaled anyway.
TEST(L06_Event, SetLeavesErrnoAloneEvenWhenItsWriteFails) {
    fib::FiberManager manager;
    fib::Waiter waiter;
    fib::Event event;
    const std::uint64_t nearly_full = 0xfffffffffffffffe;
    ASSERT_EQ(::write(event.fd(), &nearly_full, sizeof nearly_full), 8);
    errno = 0;
    event.set_through_eventfd();  // the write fails with EAGAIN
    EXPECT_EQ(errno, 0);
    EXPECT_TRUE(event.try_wait());
}

// Once another thread has set it, try_wait() reads the eventfd, and finding it empty the read
// fails with EAGAIN. That is "not signaled", not an error: errno must stay as it was, for the
// fiber that looked and for every fiber of the thread while they share one errno (a fiber may
// look at an Event between another fiber's system call and that fiber's read of errno).
TEST(L06_Event, TryWaitThatFindsNothingLeavesErrnoAlone) {
    fib::FiberManager manager;
    fib::Waiter waiter;
    fib::Event event;
    std::thread([&] { event.set(); }).join();
    EXPECT_TRUE(event.try_wait());  // the eventfd is read from now on
    errno = EBADF;
    EXPECT_FALSE(event.try_wait());  // its read fails with EAGAIN
    EXPECT_EQ(errno, EBADF);
}

// An Event's eventfd is registered with its own thread's Waiter once a fiber has waited on it:
// destroyed on another thread while that thread still runs, its close would go behind the
// Waiter's back (lesson 5: the number comes back, and a registration the kernel dropped is
// trusted). The destructor refuses, with a message.
void destroy_on_another_thread_while_its_own_runs() {
    fib::FiberManager manager;
    fib::Waiter waiter;
    auto event = std::make_unique<fib::Event>();
    std::thread([&] { event->set(); }).join();
    event->wait();  // a fiber of this thread has waited: the eventfd is this Waiter's
    std::thread([&] { event.reset(); }).join();
}

TEST(L06_EventDeathTest, AnEventDestroyedOffItsThreadWhileThatThreadRunsStops) {
    EXPECT_DEATH(destroy_on_another_thread_while_its_own_runs(),
                 "an Event was destroyed on another thread than its own \\(thread [0-9]+\\), which "
                 "still runs");
}

// Once its thread has ended (its manager and Waiter gone), nothing watches the eventfd, and
// any thread may close it: a Cluster's shards are destroyed so, after their threads.
TEST(L06_Event, AnEventWhoseThreadHasEndedMayBeDestroyedAnywhere) {
    std::unique_ptr<fib::Event> event;
    std::thread([&] {
        fib::FiberManager manager;
        fib::Waiter waiter;
        event = std::make_unique<fib::Event>();
        event->set();
        EXPECT_TRUE(event->wait());
    }).join();
    event.reset();  // on the test's thread: no message
    SUCCEED();
}

// And an Event nobody ever waited on was never registered: any thread may destroy it.
TEST(L06_Event, AnEventNoFiberWaitedOnMayBeDestroyedOnAnotherThread) {
    fib::FiberManager manager;
    auto event = std::make_unique<fib::Event>();
    event->set();
    std::thread([&] { event.reset(); }).join();
    SUCCEED();
}

}  // namespace
