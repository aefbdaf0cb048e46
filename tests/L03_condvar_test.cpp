// L03_condvar_test.cpp — lesson 3: CondVar. notify_one wakes one waiter and notify_all every
// waiter, both in FIFO order of waiting; a notify with no waiter is lost; the notifier keeps
// running; the predicate wait; main as a waiter; and join(), rebuilt on a CondVar, still
// behaves as in lesson 2.
#include <gtest/gtest.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "L02_schedule.hpp"
#include "fib/condvar.hpp"
#include "fib/fiber.hpp"

namespace {

// Yields until `changed` has `count` waiters, at most 20 times; false if it never got there.
bool yield_until_waiters(fib::CondVar& changed, std::size_t count) {
    for (int i = 0; i < 20 && changed.waiters() < count; ++i) fib::this_fiber::yield();
    return changed.waiters() == count;
}

TEST(L03_CondVar, NotifyOneWakesExactlyOneOfThreeWaiters) {
    fib::FiberManager manager;
    fib::CondVar changed;
    int woken = 0;
    auto waiter = [&] {
        changed.wait();
        ++woken;
    };
    fib::Fiber fibers[3] = {fib::Fiber(waiter), fib::Fiber(waiter), fib::Fiber(waiter)};
    ASSERT_TRUE(yield_until_waiters(changed, 3));
    changed.notify_one();
    EXPECT_EQ(changed.waiters(), 2u);
    for (int i = 0; i < 5; ++i) fib::this_fiber::yield();
    EXPECT_EQ(woken, 1);
    changed.notify_all();
    for (fib::Fiber& fiber : fibers) fiber.join();
    EXPECT_EQ(woken, 3);
}

// Records the order in which fibers begin to wait on `changed` and the order they wake.
struct WaitOrder {
    explicit WaitOrder(fib::CondVar& cv) : changed(cv) {}
    fib::CondVar& changed;
    std::vector<std::uint64_t> waited, woken;

    // A fiber's body: yield `yields` times, then wait once.
    void wait_after(int yields) {
        for (int i = 0; i < yields; ++i) fib::this_fiber::yield();
        waited.push_back(fib::this_fiber::id());
        changed.wait();
        woken.push_back(fib::this_fiber::id());
    }
};

// Fiber 1 yields twice before it waits, fiber 2 not at all, fiber 3 once: they begin to wait
// in the order 2, 3, 1, which is not the order they were spawned in.
TEST(L03_CondVar, NotifyOneWakesWaitersInTheOrderTheyBeganToWait) {
    EXPECTS_FIFO_ORDER();
    fib::FiberManager manager;
    fib::CondVar changed;
    WaitOrder order(changed);
    auto waiter = [&order](int yields) { order.wait_after(yields); };
    const std::vector<std::uint64_t>& waited = order.waited;
    const std::vector<std::uint64_t>& woken = order.woken;
    fib::Fiber fibers[3] = {fib::Fiber(waiter, 2), fib::Fiber(waiter, 0), fib::Fiber(waiter, 1)};
    ASSERT_TRUE(yield_until_waiters(changed, 3));
    EXPECT_EQ(waited, (std::vector<std::uint64_t>{2, 3, 1}));
    // One at a time: each notify_one, then a yield that lets the woken fiber run to its end.
    for (int i = 0; i < 3; ++i) {
        changed.notify_one();
        fib::this_fiber::yield();
    }
    EXPECT_EQ(woken, waited);
    for (fib::Fiber& fiber : fibers) fiber.join();
}

TEST(L03_CondVar, NotifyAllWakesEveryWaiterInTheOrderTheyBeganToWait) {
    EXPECTS_FIFO_ORDER();
    fib::FiberManager manager;
    fib::CondVar changed;
    WaitOrder order(changed);
    auto waiter = [&order](int yields) { order.wait_after(yields); };
    const std::vector<std::uint64_t>& waited = order.waited;
    const std::vector<std::uint64_t>& woken = order.woken;
    fib::Fiber fibers[4] = {fib::Fiber(waiter, 3), fib::Fiber(waiter, 1), fib::Fiber(waiter, 2),
                            fib::Fiber(waiter, 0)};
    ASSERT_TRUE(yield_until_waiters(changed, 4));
    EXPECT_NE(waited, (std::vector<std::uint64_t>{1, 2, 3, 4}));
    changed.notify_all();
    EXPECT_EQ(changed.waiters(), 0u);
    EXPECT_TRUE(woken.empty());
    // A single yield: the four woken fibers are queued ahead of main and all run to their end.
    fib::this_fiber::yield();
    EXPECT_EQ(woken, waited);
    for (fib::Fiber& fiber : fibers) fiber.join();
}

// A notify is not stored: the fiber that waits after it stays blocked until the next notify.
TEST(L03_CondVar, NotifyWithNoWaitersIsLostAndALaterWaitStillBlocks) {
    fib::FiberManager manager;
    fib::CondVar changed;
    changed.notify_one();
    changed.notify_all();
    bool woke = false;
    fib::Fiber waiter([&] {
        changed.wait();
        woke = true;
    });
    for (int i = 0; i < 5; ++i) fib::this_fiber::yield();
    EXPECT_FALSE(woke);
    EXPECT_EQ(changed.waiters(), 1u);
    changed.notify_one();
    waiter.join();
    EXPECT_TRUE(woke);
}

// The woken fiber is only queued: it runs once the notifier yields, not at the notify.
TEST(L03_CondVar, NotifierKeepsRunningUntilItYieldsThenTheWokenFiberRuns) {
    EXPECTS_FIFO_ORDER();
    fib::FiberManager manager;
    fib::CondVar changed;
    std::vector<std::string> log;
    fib::Fiber waiter([&] {
        changed.wait();
        log.push_back("waiter woke");
    });
    fib::Fiber notifier([&] {
        changed.notify_one();
        log.push_back("notifier notified");
        log.push_back("notifier still running");
        fib::this_fiber::yield();
        log.push_back("notifier after yield");
    });
    waiter.join();
    notifier.join();
    EXPECT_EQ(log, (std::vector<std::string>{"notifier notified", "notifier still running",
                                             "waiter woke", "notifier after yield"}));
}

TEST(L03_CondVar, PredicateWaitReturnsAtOnceWhenThePredicateAlreadyHolds) {
    fib::FiberManager manager;
    fib::CondVar changed;
    int checks = 0;
    changed.wait([&checks] { return ++checks > 0; });
    EXPECT_EQ(checks, 1);
    EXPECT_EQ(changed.waiters(), 0u);
    EXPECT_EQ(manager.stats().switches, 0u);
}

// The waiter needs value >= 3; each notify wakes it to check once more: 1 + 3 checks.
TEST(L03_CondVar, PredicateWaitChecksAgainAfterEachNotifyUntilItHolds) {
    fib::FiberManager manager;
    fib::CondVar changed;
    int value = 0, checks = 0;
    bool done = false;
    fib::Fiber waiter([&] {
        changed.wait([&] {
            ++checks;
            return value >= 3;
        });
        done = true;
    });
    for (int step = 1; step <= 3; ++step) {
        ASSERT_TRUE(yield_until_waiters(changed, 1)) << "at step " << step;
        EXPECT_FALSE(done);
        ++value;
        changed.notify_one();
    }
    waiter.join();
    EXPECT_TRUE(done);
    EXPECT_EQ(checks, 4);
}

TEST(L03_CondVar, WaitersCountsBlockedFibersAndDropsAtEachNotify) {
    fib::FiberManager manager;
    fib::CondVar changed;
    EXPECT_EQ(changed.waiters(), 0u);
    auto waiter = [&changed] { changed.wait(); };
    fib::Fiber fibers[3] = {fib::Fiber(waiter)};
    EXPECT_TRUE(yield_until_waiters(changed, 1));
    fibers[1] = fib::Fiber(waiter);
    fibers[2] = fib::Fiber(waiter);
    EXPECT_TRUE(yield_until_waiters(changed, 3));
    changed.notify_one();
    EXPECT_EQ(changed.waiters(), 2u);
    changed.notify_all();
    EXPECT_EQ(changed.waiters(), 0u);
    for (fib::Fiber& fiber : fibers) fiber.join();
}

TEST(L03_CondVar, MainCanWaitOnACondVarAndBeNotifiedByAFiber) {
    fib::FiberManager manager;
    fib::CondVar changed;
    bool ready = false;
    std::size_t waiters_seen = 0;
    fib::Fiber setter([&] {
        waiters_seen = changed.waiters();
        ready = true;
        changed.notify_one();
    });
    changed.wait([&ready] { return ready; });
    EXPECT_TRUE(ready);
    EXPECT_EQ(waiters_seen, 1u);
    setter.join();
}

// A CondVar belongs to a manager only while fibers wait on it: once empty, fibers of a
// later manager on another thread may wait on it.
TEST(L03_CondVar, AnEmptyCondVarCanBeWaitedOnUnderALaterManagerOnAnotherThread) {
    fib::CondVar changed;
    int rounds = 0;
    auto one_round = [&] {
        fib::FiberManager manager;
        bool ready = false;
        fib::Fiber setter([&] {
            ready = true;
            changed.notify_one();
        });
        changed.wait([&ready] { return ready; });
        setter.join();
        ++rounds;
    };
    one_round();
    std::thread other(one_round);
    other.join();
    EXPECT_EQ(rounds, 2);
}

}  // namespace
