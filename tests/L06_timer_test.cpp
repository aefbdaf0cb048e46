// L06_timer_test.cpp — lesson 6: timers. Sleepers wake in deadline order, equal deadlines in the
// order they were set; a past deadline returns without yielding; a sleeping fiber lets the others
// run and costs a few blocking polls, not a tick per millisecond; wait_for on a CondVar returns
// true on a notify, false on its timeout, and a timed-out fiber leaves the wait list; the shortest
// timeouts (down to Clock::duration::min()) have passed already, so neither waits at all. (The heap
// under cancels: tests/L06_timer_heap_test.cpp.) Deadlines are set, never durations measured.
#include <gtest/gtest.h>
#include <sys/types.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "L02_schedule.hpp"
#include "L04_waiter_harness.hpp"
#include "fib/condvar.hpp"
#include "fib/fiber.hpp"
#include "fib/timer.hpp"
#include "fib/waiter.hpp"

namespace {

using namespace std::chrono_literals;
using fib::Clock;
using l04_waiter::in_system_call;

// Fiber i yields `yields[i]` times, then sleeps until base + offsets[i] ms, then records i; base
// is `margin` from the start. The orders in which the fibers began to sleep and woke, and whether
// each began before its deadline (a sleep set too late returns at once, out of turn).
struct SleepOrder {
    std::vector<int> slept, woke;
    bool in_time = true;
};
SleepOrder sleep_until_offsets(const std::vector<int>& offsets, const std::vector<int>& yields,
                               Clock::duration margin) {
    fib::FiberManager manager;
    fib::Waiter waiter;
    SleepOrder order;
    const Clock::time_point base = Clock::now() + margin;
    std::vector<fib::Fiber> fibers;
    for (std::size_t i = 0; i < offsets.size(); ++i)
        fibers.emplace_back([&, i] {
            for (int y = 0; y < yields[i]; ++y) fib::this_fiber::yield();
            order.slept.push_back(static_cast<int>(i));
            const Clock::time_point deadline = base + std::chrono::milliseconds(offsets[i]);
            // A sleep that returns without a switch found its deadline passed: set too late.
            const std::uint64_t switches = manager.stats().switches;
            fib::sleep_until(deadline);
            if (manager.stats().switches == switches) order.in_time = false;
            // Not a duration: the heap must never wake a fiber before its deadline.
            EXPECT_GE(Clock::now(), deadline) << "fiber " << i << " woke early";
            order.woke.push_back(static_cast<int>(i));
        });
    for (fib::Fiber& fiber : fibers) fiber.join();
    EXPECT_EQ(fib::TimerHeap::of_this_thread().size(), 0u);
    return order;
}

// Runs with a 5 ms margin; a run whose thread was held up past a deadline before every fiber had
// set its timer proves nothing about order, so it is run again with a wider margin (at most 4).
SleepOrder sleep_in_time(const std::vector<int>& offsets, const std::vector<int>& yields) {
    SleepOrder order;
    for (Clock::duration margin = 5ms; margin <= 625ms; margin *= 5) {
        order = sleep_until_offsets(offsets, yields, margin);
        if (order.in_time) break;
    }
    EXPECT_TRUE(order.in_time);
    return order;
}

// Fiber i sleeps until base + offsets[i] ms, the offsets a shuffle of 0..19: they set their timers
// in id order and must wake in deadline order.
TEST(L06_Timer, TwentySleepersWakeInDeadlineOrderNotTheOrderTheySlept) {
    EXPECTS_FIFO_ORDER();
    std::vector<int> offsets(20);
    for (int i = 0; i < 20; ++i) offsets[i] = i;
    std::shuffle(offsets.begin(), offsets.end(), std::mt19937(5));
    const SleepOrder order = sleep_in_time(offsets, std::vector<int>(20, 0));
    std::vector<int> by_deadline(20);
    for (int i = 0; i < 20; ++i) by_deadline[offsets[i]] = i;
    EXPECT_EQ(order.slept, (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15,
                                             16, 17, 18, 19}));
    EXPECT_EQ(order.woke, by_deadline);
}

// Six fibers on one deadline, beginning to sleep in the order 3, 1, 5, 0, 4, 2 (fewest yields
// first): they wake in that order, which is neither their id order nor the heap's layout.
TEST(L06_Timer, EqualDeadlinesWakeInTheOrderTheyWereSet) {
    EXPECTS_FIFO_ORDER();
    const SleepOrder order = sleep_in_time(std::vector<int>(6, 3), {3, 1, 5, 0, 4, 2});
    EXPECT_EQ(order.slept, (std::vector<int>{3, 1, 5, 0, 4, 2}));
    EXPECT_EQ(order.woke, order.slept);
}

// Three deadlines shared by twelve fibers: by deadline first, then by the order they were set.
TEST(L06_Timer, MixedDeadlinesWakeByDeadlineThenBySetOrder) {
    EXPECTS_FIFO_ORDER();
    const std::vector<int> offsets{2, 0, 1, 2, 0, 1, 1, 2, 0, 0, 2, 1};
    const std::vector<int> yields{0, 3, 1, 2, 0, 3, 0, 1, 2, 1, 3, 2};
    const SleepOrder order = sleep_in_time(offsets, yields);
    std::vector<int> expected = order.slept;
    std::stable_sort(expected.begin(), expected.end(),
                     [&](int a, int b) { return offsets[a] < offsets[b]; });
    EXPECT_EQ(order.woke, expected);
}

TEST(L06_Timer, ZeroNegativeAndPastSleepsReturnWithoutYielding) {
    fib::FiberManager manager;
    fib::Waiter waiter;
    bool other_ran = false;
    fib::Fiber other([&] { other_ran = true; });
    const std::uint64_t switches = manager.stats().switches;
    fib::sleep_for(0ms);
    fib::sleep_for(-5ms);
    fib::sleep_until(Clock::now() - 1s);
    fib::sleep_until(Clock::time_point{});
    EXPECT_EQ(manager.stats().switches, switches);
    EXPECT_FALSE(other_ran);
    EXPECT_EQ(fib::TimerHeap::of_this_thread().size(), 0u);
    other.join();
    EXPECT_TRUE(other_ran);
}

// ---- The shortest timeouts. Zero, negative, and down to Clock::duration::min(): the time has
// already passed. -2'562'047 h is the most negative whole number of hours a Clock::duration holds
// (hours::min() does not fit: its conversion to nanoseconds overflows before any fib call).
const Clock::duration kShortestTimeouts[] = {Clock::duration::min(), std::chrono::nanoseconds::min(),
                                             -std::chrono::hours(2'562'047), -1ns, 0ns};

// A deadline that has passed is now, never far in the past: a later "deadline - now" on one near
// Clock::time_point::min() would overflow (and wrap into a wait of weeks). The longest timeout
// stays "no real limit".
TEST(L06_Timer, DeadlineAfterAZeroOrNegativeTimeoutIsNowNotFarInThePast) {
    for (const Clock::duration timeout : kShortestTimeouts) {
        const Clock::time_point before = Clock::now();
        const Clock::time_point deadline = fib::deadline_after(timeout);
        EXPECT_GE(deadline, before) << timeout.count() << " ns";
        EXPECT_LE(deadline, Clock::now()) << timeout.count() << " ns";
    }
    EXPECT_EQ(fib::deadline_after(Clock::duration::max()), Clock::time_point::max());
}

// sleep_for returns true at once for each, as does sleep_until(Clock::time_point::min()): no
// switch, no timer, no Waiter's fiber, and the fiber queued behind main has not run.
TEST(L06_Timer, SleepsWithTheShortestTimeoutsReturnTrueWithoutYielding) {
    fib::FiberManager manager;
    fib::Waiter waiter;
    bool other_ran = false;
    fib::Fiber other([&] { other_ran = true; });
    const std::uint64_t switches = manager.stats().switches;
    for (const Clock::duration timeout : kShortestTimeouts)
        EXPECT_TRUE(fib::sleep_for(timeout)) << timeout.count() << " ns";
    EXPECT_TRUE(fib::sleep_until(Clock::time_point::min()));
    EXPECT_EQ(manager.stats().switches, switches);
    EXPECT_FALSE(other_ran);
    EXPECT_EQ(waiter.stats().fibers_started, 0u);
    EXPECT_EQ(fib::TimerHeap::of_this_thread().size(), 0u);
    other.join();
    EXPECT_TRUE(other_ran);
}

// The worker, queued behind the sleeper, runs as soon as the sleeper parks.
TEST(L06_Timer, ASleepingFiberLetsTheNextFiberRunBeforeItWakes) {
    EXPECTS_FIFO_ORDER();
    fib::FiberManager manager;
    fib::Waiter waiter;
    std::vector<std::string> log;
    fib::Fiber sleeper([&] {
        log.push_back("sleeper sleeps");
        fib::sleep_for(20ms);
        log.push_back("sleeper wakes");
    });
    fib::Fiber worker([&] { log.push_back("worker runs"); });
    sleeper.join();
    worker.join();
    EXPECT_EQ(log, (std::vector<std::string>{"sleeper sleeps", "worker runs", "sleeper wakes"}));
}

// Main joins a fiber that only sleeps: nothing is ready, yet a deadline is pending, so the
// Waiter blocks in its poll instead of parking, and no deadlock is reported. (The sleeps are
// 20 ms, not 2: under ThreadSanitizer on a loaded 2-core machine a 2 ms deadline had passed
// before the Waiter looked, its poll did not block, and the count read 0.)
TEST(L06_Timer, JoiningTheOnlyFiberWhileItSleepsIsNotADeadlock) {
    fib::FiberManager manager;
    fib::Waiter waiter;
    bool woke = false;
    fib::Fiber sleeper([&] {
        fib::sleep_for(20ms);
        woke = true;
    });
    sleeper.join();
    EXPECT_TRUE(woke);
    fib::sleep_for(20ms);  // main itself, with only the Waiter beside it
    EXPECT_GE(waiter.stats().blocking_polls, 1u);
}

// One sleep of 30 ms with nothing else to run: the Waiter blocks until the deadline, so the sleep
// costs one or two polls (a poll ending a hair early comes back once), never one per millisecond.
TEST(L06_Timer, ASleepCostsAFewBlockingPollsNotATickPerMillisecond) {
    fib::FiberManager manager;
    fib::Waiter waiter;
    fib::sleep_for(30ms);
    const fib::WaiterStats stats = waiter.stats();
    EXPECT_GE(stats.blocking_polls, 1u);
    EXPECT_LE(stats.polls, 4u);
}

// Main sleeps in 10 ms steps until another thread has seen it sit in the Poller's system call
// (bounded: 200 steps). A thread whose only fiber sleeps waits in the kernel, not in a loop.
TEST(L06_Timer, AThreadWhoseFibersAllSleepWaitsInThePollerSystemCall) {
    fib::FiberManager manager;
    fib::Waiter waiter;
    const pid_t main_tid = ::gettid();
    std::atomic<bool> seen{false}, done{false};
    std::thread watcher([&] {
        for (int i = 0; i < 5000 && !in_system_call(main_tid); ++i)
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
        seen = in_system_call(main_tid);
        done = true;
    });
    for (int i = 0; i < 200 && !done; ++i) fib::sleep_for(10ms);
    watcher.join();
    EXPECT_TRUE(seen);
}

// ---- wait_for on a CondVar.

// Yields until `changed` has `count` waiters, at most 20 times.
bool yield_until_waiters(fib::CondVar& changed, std::size_t count) {
    for (int i = 0; i < 20 && changed.waiters() < count; ++i) fib::this_fiber::yield();
    return changed.waiters() == count;
}

TEST(L06_Timer, WaitForReturnsTrueWhenNotifiedBeforeTheDeadlineAndDropsItsTimer) {
    fib::FiberManager manager;
    fib::Waiter waiter;
    fib::CondVar changed;
    bool notified = false;
    fib::Fiber waiting([&] { notified = fib::wait_for(changed, 10s).notified(); });
    ASSERT_TRUE(yield_until_waiters(changed, 1));
    EXPECT_EQ(fib::TimerHeap::of_this_thread().size(), 1u);
    changed.notify_one();
    waiting.join();
    EXPECT_TRUE(notified);
    EXPECT_EQ(fib::TimerHeap::of_this_thread().size(), 0u);
}

TEST(L06_Timer, WaitForReturnsFalseOnTimeoutAndLeavesTheWaitList) {
    fib::FiberManager manager;
    fib::Waiter waiter;
    fib::CondVar changed;
    bool notified = true;
    fib::Fiber waiting([&] { notified = fib::wait_for(changed, 2ms).notified(); });
    ASSERT_TRUE(yield_until_waiters(changed, 1));
    waiting.join();
    EXPECT_FALSE(notified);
    EXPECT_EQ(changed.waiters(), 0u);
    EXPECT_EQ(fib::TimerHeap::of_this_thread().size(), 0u);
    // Main, with nobody to notify it: times out too, rather than reporting a deadlock.
    EXPECT_FALSE(fib::wait_for(changed, 1ms));
}

// A wait_for whose timeout has already run out is timed out before it begins, as a sleep is: no
// switch, no timer, not on the CondVar's list. (Parked, main would leave the Waiter alone with a
// deadline it computed as weeks away, from a "deadline - now" that overflowed: a hang.)
TEST(L06_Timer, WaitForWithTheShortestTimeoutsTimesOutWithoutYielding) {
    fib::FiberManager manager;
    fib::Waiter waiter;
    fib::CondVar changed;
    bool other_ran = false;
    fib::Fiber other([&] { other_ran = true; });
    const std::uint64_t switches = manager.stats().switches;
    for (const Clock::duration timeout : kShortestTimeouts)
        EXPECT_TRUE(fib::wait_for(changed, timeout).timed_out()) << timeout.count() << " ns";
    EXPECT_EQ(manager.stats().switches, switches);
    EXPECT_FALSE(other_ran);
    EXPECT_EQ(changed.waiters(), 0u);
    EXPECT_EQ(waiter.stats().fibers_started, 0u);
    EXPECT_EQ(fib::TimerHeap::of_this_thread().size(), 0u);
    other.join();
}

// "patient" waits with no timeout behind "hasty", which times out: the next notify_one must go
// to patient, not to hasty's stale place in the list.
TEST(L06_Timer, AfterATimeoutNotifyOneWakesTheNextWaiterNotTheTimedOutOne) {
    fib::FiberManager manager;
    fib::Waiter waiter;
    fib::CondVar changed;
    bool hasty_notified = true, patient_woke = false;
    fib::Fiber hasty([&] { hasty_notified = fib::wait_for(changed, 2ms).notified(); });
    fib::Fiber patient([&] {
        changed.wait();
        patient_woke = true;
    });
    ASSERT_TRUE(yield_until_waiters(changed, 2));
    hasty.join();
    EXPECT_FALSE(hasty_notified);
    EXPECT_EQ(changed.waiters(), 1u);
    changed.notify_one();
    EXPECT_EQ(changed.waiters(), 0u);
    patient.join();
    EXPECT_TRUE(patient_woke);
}

// Three timed waiters in the order first, hasty, last; hasty's 2 ms run out, the others' 10 s do
// not. Two notify_one calls then wake first and last, in that order.
TEST(L06_Timer, TimedOutAndNotifiedWaitersMixedEachGetTheirOwnResult) {
    EXPECTS_FIFO_ORDER();
    fib::FiberManager manager;
    fib::Waiter waiter;
    fib::CondVar changed;
    const char* const names[3] = {"first", "hasty", "last"};
    const Clock::duration timeouts[3] = {10s, 2ms, 10s};
    int notified[3] = {-1, -1, -1};
    std::vector<std::string> woke;
    auto wait = [&](int i) {
        notified[i] = fib::wait_for(changed, timeouts[i]).notified();
        woke.push_back(names[i]);
    };
    fib::Fiber fibers[3] = {fib::Fiber(wait, 0), fib::Fiber(wait, 1), fib::Fiber(wait, 2)};
    ASSERT_TRUE(yield_until_waiters(changed, 3));
    fibers[1].join();
    EXPECT_EQ(changed.waiters(), 2u);
    EXPECT_EQ(fib::TimerHeap::of_this_thread().size(), 2u);
    changed.notify_one();
    changed.notify_one();
    for (fib::Fiber& fiber : fibers)
        if (fiber.joinable()) fiber.join();
    EXPECT_EQ(woke, (std::vector<std::string>{"hasty", "first", "last"}));
    EXPECT_EQ((std::vector<int>(notified, notified + 3)), (std::vector<int>{1, 0, 1}));
    EXPECT_EQ(fib::TimerHeap::of_this_thread().size(), 0u);
}

}  // namespace
