// L06_timer_heap_test.cpp — lesson 6: the TimerHeap under cancels. Cancels from the middle of the
// heap keep it a heap (checked through its public add/cancel and each Timer's index); the timeout
// it gives the Waiter stays in range for the earliest and the latest deadlines; and among many
// waits that something else ends early (wait_any, wait_for), the ones left to time out still wake
// in deadline order, with no timer and no registration left behind.
#include <gtest/gtest.h>
#include <poll.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <random>
#include <vector>

#include "L02_schedule.hpp"
#include "L04_waiter_harness.hpp"
#include "fib/condvar.hpp"
#include "fib/fiber.hpp"
#include "fib/timer.hpp"
#include "fib/wait_any.hpp"
#include "fib/waiter.hpp"

namespace {

using namespace std::chrono_literals;
using namespace l04_waiter;
using fib::Clock;

// Every timer in the heap sits where its index says, the indices are 0..size-1, and no timer is
// earlier than its parent (equal deadlines: set first, nearer the root).
void expect_a_heap(const std::vector<fib::Timer>& timers, std::size_t size) {
    std::vector<const fib::Timer*> at(size, nullptr);
    for (const fib::Timer& timer : timers) {
        if (timer.index == fib::Timer::kNotSet) continue;
        ASSERT_LT(timer.index, size);
        ASSERT_EQ(at[timer.index], nullptr) << "two timers at index " << timer.index;
        at[timer.index] = &timer;
    }
    for (std::size_t i = 1; i < size; ++i) {
        ASSERT_NE(at[i], nullptr);
        const fib::Timer& parent = *at[(i - 1) / 2];
        const bool parent_later = parent.deadline > at[i]->deadline ||
                                  (parent.deadline == at[i]->deadline && parent.order > at[i]->order);
        ASSERT_FALSE(parent_later) << "index " << i << " is earlier than its parent";
    }
}

// 400 timers an hour or more away (set by main, which never parks here, so none can fire), many
// on equal deadlines; then 300 cancels in random order, most from the heap's middle, where the
// last timer fills the hole and must move up or down. Then the rest, and the heap is empty.
TEST(L06_TimerHeap, StaysAHeapThroughRandomCancelsFromItsMiddle) {
    fib::FiberManager manager;
    fib::Waiter waiter;
    fib::TimerHeap& heap = fib::TimerHeap::of_this_thread();
    std::mt19937 random(7);
    const Clock::time_point far = Clock::now() + 1h;
    std::vector<fib::Timer> timers(400);
    for (fib::Timer& timer : timers) {
        timer = fib::Timer{far + std::chrono::seconds(random() % 100), manager.begin_wait()};
        heap.add(timer);
    }
    ASSERT_EQ(heap.size(), 400u);
    expect_a_heap(timers, heap.size());
    std::vector<std::size_t> order(timers.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::shuffle(order.begin(), order.end(), random);
    for (std::size_t n = 0; n < 300; ++n) {
        heap.cancel(timers[order[n]]);
        EXPECT_EQ(timers[order[n]].index, fib::Timer::kNotSet);
        heap.cancel(timers[order[n]]);  // a second cancel is a no-op
        ASSERT_EQ(heap.size(), 399u - n);
        expect_a_heap(timers, heap.size());
    }
    for (std::size_t n = 300; n < order.size(); ++n) heap.cancel(timers[order[n]]);
    EXPECT_EQ(heap.size(), 0u);
    for (const fib::Timer& timer : timers) EXPECT_FALSE(timer.expired);
}

// What the Waiter's poll is told: 0 for a deadline that has passed, however far back (compared
// with now, not subtracted from it: Clock::time_point::min() - now overflows, and wrapped it was
// INT_MAX ms, 24.8 days); INT_MAX ms for Clock::time_point::max(), the longest a poll can wait.
TEST(L06_TimerHeap, ADeadlineFarInThePastGivesTheWaiterATimeoutOfZeroNotOfWeeks) {
    fib::FiberManager manager;
    fib::Waiter waiter;
    fib::TimerHeap& heap = fib::TimerHeap::of_this_thread();
    EXPECT_EQ(heap.timeout_ms(), -1);
    const Clock::time_point past[] = {Clock::time_point::min(),
                                      Clock::time_point(-std::chrono::hours(2'562'047)),
                                      Clock::time_point{}, Clock::now()};
    for (const Clock::time_point deadline : past) {
        fib::Timer timer{deadline, manager.begin_wait()};
        heap.add(timer);
        EXPECT_EQ(heap.timeout_ms(), 0) << deadline.time_since_epoch().count() << " ns";
        heap.cancel(timer);
    }
    fib::Timer never{Clock::time_point::max(), manager.begin_wait()};
    heap.add(never);
    EXPECT_EQ(heap.timeout_ms(), INT_MAX);
    heap.cancel(never);
    EXPECT_EQ(heap.size(), 0u);
}

enum Kind { kSleep, kWaitAny, kWaitFor };

struct Outcome {
    std::vector<int> woke, by_deadline;  // the sleepers: as they woke, as their deadlines say
    std::vector<int> early, woken_early; // the others: those that saw their wake-up, those woken
    bool in_time = true;                 // every sleeper set its timer before its deadline
    std::size_t timers_set = 0;          // in the heap once every fiber has begun its wait
};

// 60 fibers, at random (fixed seed): about a third sleep until base + 0..9 ms (base = now +
// margin), the others wait_any on a pipe or wait_for a CondVar with 10 s to spare; main wakes
// those early in random order, a few at a time between short sleeps of its own, so their timers
// leave the heap from its middle while the sleepers' expire.
Outcome wake_most_early(Clock::duration margin) {
    constexpr int kFibers = 60;
    fib::FiberManager manager;
    fib::Waiter waiter;
    std::mt19937 random(11);
    std::vector<Kind> kinds(kFibers);
    std::vector<int> offsets(kFibers);
    std::vector<Pair> pipes;
    std::vector<std::unique_ptr<fib::CondVar>> condvars;
    for (int i = 0; i < kFibers; ++i) {
        kinds[i] = static_cast<Kind>(random() % 3);
        offsets[i] = static_cast<int>(random() % 10);
        pipes.push_back(make_fds());
        condvars.push_back(std::make_unique<fib::CondVar>());
    }
    Outcome outcome;
    std::vector<int> slept;
    const Clock::time_point base = Clock::now() + margin;
    std::vector<fib::Fiber> fibers;
    for (int i = 0; i < kFibers; ++i)
        fibers.emplace_back([&, i] {
            if (kinds[i] == kSleep) {
                slept.push_back(i);
                const Clock::time_point deadline = base + std::chrono::milliseconds(offsets[i]);
                // A sleep that returns without a switch found its deadline passed: set too late.
                const std::uint64_t switches = manager.stats().switches;
                fib::sleep_until(deadline);
                if (manager.stats().switches == switches) outcome.in_time = false;
                outcome.woke.push_back(i);
            } else if (kinds[i] == kWaitAny) {
                const fib::Ready ready = fib::wait_any({{pipes[i].first.get(), POLLIN}}, 10s);
                if (ready.index == 0 && ready.revents == POLLIN) outcome.early.push_back(i);
            } else if (fib::wait_for(*condvars[i], 10s)) {
                outcome.early.push_back(i);
            }
        });
    fib::this_fiber::yield();  // every fiber has begun its wait
    outcome.timers_set = fib::TimerHeap::of_this_thread().size();
    for (int i = 0; i < kFibers; ++i)
        if (kinds[i] != kSleep) outcome.woken_early.push_back(i);
    std::shuffle(outcome.woken_early.begin(), outcome.woken_early.end(), random);
    for (std::size_t n = 0; n < outcome.woken_early.size(); ++n) {
        const int i = outcome.woken_early[n];
        if (kinds[i] == kWaitAny)
            EXPECT_EQ(::write(pipes[i].second.get(), "e", 1), 1);
        else
            condvars[i]->notify_one();
        if (n % 4 == 3) fib::sleep_for(1ms);
    }
    for (fib::Fiber& fiber : fibers) fiber.join();
    outcome.by_deadline = slept;
    std::stable_sort(outcome.by_deadline.begin(), outcome.by_deadline.end(),
                     [&](int a, int b) { return offsets[a] < offsets[b]; });
    std::sort(outcome.early.begin(), outcome.early.end());
    std::sort(outcome.woken_early.begin(), outcome.woken_early.end());
    EXPECT_EQ(fib::TimerHeap::of_this_thread().size(), 0u);
    EXPECT_EQ(waiter.stats().waiting, 0u);
    return outcome;
}

// A run in which the thread was held up past a sleeper's deadline before it set its timer proves
// nothing about order; it is run again with a wider margin (at most 4 runs).
TEST(L06_TimerHeap, TimeoutsAmongRandomEarlyWakeUpsStillFireInDeadlineOrder) {
    EXPECTS_FIFO_ORDER();
    Outcome outcome;
    for (Clock::duration margin = 5ms; margin <= 625ms; margin *= 5) {
        outcome = wake_most_early(margin);
        if (outcome.in_time) break;
    }
    ASSERT_TRUE(outcome.in_time);
    EXPECT_EQ(outcome.timers_set, 60u);
    EXPECT_GT(outcome.woke.size(), 10u);
    EXPECT_EQ(outcome.woke, outcome.by_deadline);
    EXPECT_EQ(outcome.early, outcome.woken_early);
}

}  // namespace
