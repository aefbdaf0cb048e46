// L06_timer_misuse_test.cpp — lesson 6: misuse of timers and wait_any stops the program with one
// clear message (death tests that match it): waiting with no FiberManager or no Waiter, too many
// sources, one fd twice, two fibers on one fd, a Timer set twice, a wait on nothing for ever.
// Then the limits of a timeout: Clock::duration::max() as "no real limit", each scenario run in a
// child process of its own.
#include <gtest/gtest.h>
#include <poll.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <span>
#include <vector>

#include "L02_schedule.hpp"
#include "L04_waiter_harness.hpp"
#include "fib/condvar.hpp"
#include "fib/fiber.hpp"
#include "fib/io.hpp"
#include "fib/timer.hpp"
#include "fib/wait_any.hpp"
#include "fib/waiter.hpp"

namespace {

using namespace std::chrono_literals;
using namespace l04_waiter;
using fib::Clock;

void sleep_with_a_manager_but_no_waiter() {
    fib::FiberManager manager;
    fib::sleep_for(1ms);
}

void wait_for_with_a_manager_but_no_waiter() {
    fib::FiberManager manager;
    fib::CondVar changed;
    fib::wait_for(changed, 1ms);
}

void wait_any_with_a_manager_but_no_waiter() {
    fib::FiberManager manager;
    Pair pipe = make_fds();
    fib::wait_any({{pipe.first.get(), POLLIN}}, 1ms);
}

void wait_any_on_seventeen_fds() {
    fib::FiberManager manager;
    fib::Waiter waiter;
    std::vector<Pair> pipes(fib::kMaxSources + 1);
    std::vector<fib::Source> sources;
    for (Pair& pipe : pipes) {
        pipe = make_fds();
        sources.push_back({pipe.first.get(), POLLIN});
    }
    fib::wait_any(sources, 1ms);
}

void wait_any_on_one_fd_twice() {
    fib::FiberManager manager;
    fib::Waiter waiter;
    Pair pipe = make_fds();
    fib::wait_any({{pipe.first.get(), POLLIN}, {pipe.first.get(), POLLIN}});
}

void two_fibers_wait_any_on_one_fd() {
    fib::FiberManager manager;
    fib::Waiter waiter;
    Pair pipe = make_fds();
    const int fd = pipe.first.get();
    fib::Fiber first({.name = "first"}, [&] { fib::wait_any({{fd, POLLIN}}, 10s); });
    fib::Fiber second({.name = "second"}, [&] { fib::io::wait(fd, POLLIN, 10s); });
    first.join();
}

// Nothing to wait for and no deadline: nothing can ever wake main. Another fiber waits on a
// pipe nobody writes, so no deadlock report could come either: the thread would sleep in the
// kernel for ever (the alarm bounds it if the call does not stop at once).
void wait_any_on_nothing_for_ever() {
    fib::FiberManager manager;
    fib::Waiter waiter;
    Pair pipe = make_fds();
    fib::Fiber([&] { fib::io::wait(pipe.first.get(), POLLIN); }).detach();
    fib::this_fiber::yield();
    ::alarm(5);
    fib::wait_any(std::span<const fib::Source>());
}

// A timer's on_expire runs on the Waiter's own fiber; if it sleeps there, nobody is left to
// ask the kernel anything. `sleep` is what the callback calls. Each must stop, the ones with a
// deadline that has passed too: they return at once and would add no timer, so a check in
// TimerHeap::add alone let `sleep_for(1ms)` live whenever 1 ms passed before sleep_until
// looked at the clock (under qemu-user on a busy machine it did).
// (`Sleep` is a lambda that captures nothing: on_expire, a plain function, makes one of its own.)
template <class Sleep>
void sleep_on_the_waiters_fiber(Sleep) {
    fib::FiberManager manager;
    fib::Waiter waiter;
    fib::Timer timer{fib::Clock::now(), manager.begin_wait()};
    timer.on_expire = [](fib::Timer&) { Sleep{}(); };
    fib::TimerHeap::of_this_thread().add(timer);
    manager.park(timer.token, fib::WaitSite{"a timer", nullptr, nullptr});
}

void add_a_timer_twice() {
    fib::FiberManager manager;
    fib::Waiter waiter;
    fib::Timer timer{Clock::now() + 1h, manager.begin_wait()};
    fib::TimerHeap::of_this_thread().add(timer);
    fib::TimerHeap::of_this_thread().add(timer);
}

TEST(L06_TimerMisuseDeathTest, SleepForOnAThreadWithNoFiberManagerStops) {
    EXPECT_DEATH(fib::sleep_for(1ms),
                 "fib: fatal: sleep_for\\(\\) was called on a thread with no FiberManager");
}

TEST(L06_TimerMisuseDeathTest, WaitForOnAThreadWithNoFiberManagerStops) {
    fib::CondVar changed;
    EXPECT_DEATH(fib::wait_for(changed, 1ms),
                 "fib: fatal: wait_for\\(\\) was called on a thread with no FiberManager");
}

TEST(L06_TimerMisuseDeathTest, SleepForWithNoWaiterStops) {
    EXPECT_DEATH(sleep_with_a_manager_but_no_waiter(),
                 "fib: fatal: a timer was set on a thread with no Waiter; create a fib::Waiter");
}

TEST(L06_TimerMisuseDeathTest, WaitForWithNoWaiterStops) {
    EXPECT_DEATH(wait_for_with_a_manager_but_no_waiter(),
                 "fib: fatal: a timer was set on a thread with no Waiter");
}

TEST(L06_TimerMisuseDeathTest, AddingOneTimerTwiceStops) {
    EXPECT_DEATH(add_a_timer_twice(), "fib: fatal: a Timer was added to the heap twice");
}

TEST(L06_WaitAnyMisuseDeathTest, WaitAnyOnAThreadWithNoFiberManagerStops) {
    Pair pipe = make_fds();
    EXPECT_DEATH(fib::wait_any({{pipe.first.get(), POLLIN}}),
                 "fib: fatal: wait_any\\(\\) was called on a thread with no Waiter");
}

TEST(L06_WaitAnyMisuseDeathTest, WaitAnyWithNoWaiterStops) {
    EXPECT_DEATH(wait_any_with_a_manager_but_no_waiter(),
                 "fib: fatal: wait_any\\(\\) was called on a thread with no Waiter; create a "
                 "fib::Waiter after the FiberManager");
}

TEST(L06_WaitAnyMisuseDeathTest, MoreThanKMaxSourcesStopsNamingTheCountAndTheLimit) {
    EXPECT_DEATH(wait_any_on_seventeen_fds(),
                 "fib: fatal: fiber 0 \\(main\\) called wait_any\\(\\) with 17 sources; at most 16");
}

TEST(L06_WaitAnyMisuseDeathTest, OneFdTwiceInOneWaitAnyStops) {
    EXPECT_DEATH(wait_any_on_one_fd_twice(),
                 "fib: fatal: fiber 0 \\(main\\) waits to read fd [0-9]+, which fiber 0 \\(main\\) "
                 "already waits to read; one fiber per direction per fd");
}

TEST(L06_WaitAnyMisuseDeathTest, TwoFibersWaitingOnOneFdStopsNamingBoth) {
    EXPECTS_FIFO_ORDER();
    EXPECT_DEATH(two_fibers_wait_any_on_one_fd(),
                 "fib: fatal: fiber 2 \\(second\\) waits to read fd [0-9]+, which fiber 1 "
                 "\\(first\\) already waits to read; one fiber per direction per fd");
}

TEST(L06_WaitAnyMisuseDeathTest, WaitAnyOnNothingWithNoTimeoutStopsAtOnce) {
    EXPECT_DEATH(wait_any_on_nothing_for_ever(),
                 "fib: fatal: fiber 0 \\(main\\) called wait_any\\(\\) with no source and no "
                 "timeout: nothing could ever wake it");
}

constexpr const char* kSleptOnTheWaiter =
    "fib: fatal: the Waiter's own fiber set a timer; it would sleep with nobody left to wake it";

TEST(L06_TimerMisuseDeathTest, SleepingOnTheWaitersOwnFiberStops) {
    EXPECT_DEATH(sleep_on_the_waiters_fiber([] { fib::sleep_for(1h); }), kSleptOnTheWaiter);
}

TEST(L06_TimerMisuseDeathTest, SleepingOnTheWaitersOwnFiberStopsWhenTheDeadlineHasPassed) {
    EXPECT_DEATH(sleep_on_the_waiters_fiber([] { fib::sleep_for(0ms); }), kSleptOnTheWaiter);
    EXPECT_DEATH(sleep_on_the_waiters_fiber([] { fib::sleep_until(Clock::time_point::min()); }),
                 kSleptOnTheWaiter);
}

TEST(L06_TimerMisuseDeathTest, WaitForOnTheWaitersOwnFiberStopsWhateverTheTimeout) {
    static fib::CondVar never;
    EXPECT_DEATH(sleep_on_the_waiters_fiber([] { fib::wait_for(never, 1h); }), kSleptOnTheWaiter);
    EXPECT_DEATH(sleep_on_the_waiters_fiber([] { fib::wait_for(never, 0ms); }), kSleptOnTheWaiter);
}

// ---- The longest timeout. Clock::duration::max() is the natural "no real limit": a sleep must
// not end at once, and a notify or a byte that comes later must still win. Each scenario runs in
// a child that exits 0 when it holds, 3 with a message when the wait ended at once; an overflow
// in now + max() that UBSan stops (SAN=1) then fails this test alone, not the whole run.

[[noreturn]] void gave_up(const char* call, const char* what) {
    std::fprintf(stderr, "%s with Clock::duration::max() ended at once, before %s\n", call, what);
    std::exit(3);
}

[[noreturn]] void sleep_for_the_longest_duration() {
    bool woke = false;
    fib::FiberManager manager;
    fib::Waiter waiter;
    fib::Fiber([&] {
        fib::sleep_for(Clock::duration::max());
        woke = true;
    }).detach();
    for (int i = 0; i < 5; ++i) fib::this_fiber::yield();
    if (woke) gave_up("sleep_for", "any time had passed");
    std::exit(0);  // the sleeper still sleeps: leave without waiting for it
}

[[noreturn]] void wait_for_notified_with_the_longest_timeout() {
    bool notified = false;
    {
        fib::FiberManager manager;
        fib::Waiter waiter;
        fib::CondVar changed;
        fib::Fiber waiting([&] { notified = fib::wait_for(changed, Clock::duration::max()).notified(); });
        // The Waiter polls and expires due timers on each of these turns.
        for (int i = 0; i < 5; ++i) fib::this_fiber::yield();
        if (changed.waiters() != 1) gave_up("wait_for", "a notify");
        changed.notify_one();
        waiting.join();
    }
    std::exit(notified ? 0 : 1);
}

[[noreturn]] void io_read_with_the_longest_timeout() {
    ssize_t n = 0;
    char byte = 0;
    {
        fib::FiberManager manager;
        fib::Waiter waiter;
        Pair pipe = make_fds();
        fib::Fiber reader([&] { n = fib::io::read(pipe.first.get(), &byte, 1, Clock::duration::max()); });
        for (int i = 0; i < 5; ++i) fib::this_fiber::yield();
        if (waiter.stats().waiting != 1) gave_up("io::read", "its byte");
        if (::write(pipe.second.get(), "m", 1) != 1) std::exit(2);
        reader.join();
    }
    std::exit(n == 1 && byte == 'm' ? 0 : 1);
}

TEST(L06_TimerLimitsDeathTest, SleepForTheLongestDurationDoesNotReturnAtOnce) {
    EXPECT_EXIT(sleep_for_the_longest_duration(), testing::ExitedWithCode(0), "");
}

TEST(L06_TimerLimitsDeathTest, WaitForWithTheLongestTimeoutStillReturnsTrueOnANotify) {
    EXPECT_EXIT(wait_for_notified_with_the_longest_timeout(), testing::ExitedWithCode(0), "");
}

TEST(L06_WaitAnyLimitsDeathTest, IoReadWithTheLongestTimeoutStillWaitsForTheByte) {
    EXPECT_EXIT(io_read_with_the_longest_timeout(), testing::ExitedWithCode(0), "");
}

}  // namespace
