// L02_manager_test.cpp — lesson 2: the FiberManager's scheduling (FIFO yields, spawn, join,
// detach, wait_for_all), argument passing, the stack pool's accounting, and the IntrusiveList
// that the ready queue is built on.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <functional>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "L01_sanitizers.hpp"
#include "L02_schedule.hpp"
#include "fib/fiber.hpp"
#include "fib/intrusive_list.hpp"

namespace {

using LogEntry = std::pair<std::uint64_t, std::uint64_t>;  // (fiber id, a step or a count)

TEST(L02_Manager, YieldsRunReadyFibersInFifoRoundRobinOrder) {
    EXPECTS_FIFO_ORDER();
    fib::FiberManager manager;
    std::vector<LogEntry> order;
    auto take_three_steps = [&order] {
        for (std::uint64_t step = 0; step < 3; ++step) {
            order.emplace_back(fib::this_fiber::id(), step);
            fib::this_fiber::yield();
        }
    };
    fib::Fiber fibers[3];
    for (fib::Fiber& fiber : fibers) fiber = fib::Fiber(take_three_steps);
    for (fib::Fiber& fiber : fibers) fiber.join();
    const std::vector<LogEntry> round_robin = {{1, 0}, {2, 0}, {3, 0}, {1, 1}, {2, 1},
                                            {3, 1}, {1, 2}, {2, 2}, {3, 2}};
    EXPECT_EQ(order, round_robin);
}

TEST(L02_Manager, SpawnOnlyQueuesTheFiberItRunsWhenMainYields) {
    fib::FiberManager manager;
    int runs = 0;
    fib::Fiber worker([&runs] { ++runs; });
    EXPECT_EQ(runs, 0);
    EXPECT_EQ(manager.ready_count(), 1u);
    fib::this_fiber::yield();
    EXPECT_EQ(runs, 1);
    worker.join();
}

TEST(L02_Manager, YieldWithNoOtherReadyFiberReturnsWithoutSwitching) {
    fib::FiberManager manager;
    for (int i = 0; i < 3; ++i) fib::this_fiber::yield();
    EXPECT_EQ(manager.stats().switches, 0u);
    // A fiber alone (main is blocked in join) yields five times: the only switches are into it
    // and, at its end, back to main.
    int yields = 0;
    fib::Fiber alone([&yields] {
        for (; yields < 5; ++yields) fib::this_fiber::yield();
    });
    alone.join();
    EXPECT_EQ(yields, 5);
    EXPECT_EQ(manager.stats().switches, 2u);
}

TEST(L02_Manager, JoinReturnsAfterTheFiberFinishedWithItsWritesVisible) {
    fib::FiberManager manager;
    std::vector<int> squares;
    fib::Fiber worker([&squares] {
        for (int i = 1; i <= 4; ++i) {
            squares.push_back(i * i);
            fib::this_fiber::yield();
        }
    });
    worker.join();
    EXPECT_EQ(squares, (std::vector<int>{1, 4, 9, 16}));
    EXPECT_EQ(manager.stats().finished, 1u);
    EXPECT_EQ(manager.stats().records, 0u);
}

// While main is in join(), the worker finds main parked "in join, waiting for" it.
TEST(L02_Manager, JoinOfARunningFiberParksTheJoinerWaitingForThatFiber) {
    fib::FiberManager manager;
    const fib::FiberRecord* main_record = manager.running();
    const fib::FiberRecord *main_waits_for = nullptr, *worker_record = nullptr;
    bool main_blocked = false;
    std::string main_waits_in;
    fib::Fiber worker([&] {
        fib::this_fiber::yield();
        worker_record = manager.running();
        main_blocked = main_record->state == fib::FiberState::Blocked;
        main_waits_in = main_record->waiting_for.what;
        main_waits_for = main_record->waiting_for.fiber;
    });
    worker.join();
    EXPECT_TRUE(main_blocked);
    EXPECT_EQ(main_waits_in, "join");
    EXPECT_EQ(main_waits_for, worker_record);
    EXPECT_EQ(manager.running()->waiting_for.what, nullptr);  // cleared by wake()
    EXPECT_EQ(manager.stats().records, 0u);
}

TEST(L02_Manager, JoinOfAnAlreadyFinishedFiberReturnsWithoutSwitching) {
    fib::FiberManager manager;
    fib::Fiber worker([] {});
    // The worker runs to its end and main continues: finished, but its record awaits join().
    fib::this_fiber::yield();
    ASSERT_EQ(manager.stats().finished, 1u);
    ASSERT_EQ(manager.stats().records, 1u);
    const std::uint64_t switches = manager.stats().switches;
    worker.join();
    EXPECT_EQ(manager.stats().switches, switches);
    EXPECT_EQ(manager.stats().records, 0u);
}

TEST(L02_Manager, DetachedFibersAllFinishBeforeWaitForAllReturns) {
    fib::FiberManager manager;
    int finished = 0;
    for (int fiber = 0; fiber < 10; ++fiber) {
        fib::Fiber([&finished, fiber] {
            for (int step = 0; step < fiber; ++step) fib::this_fiber::yield();
            ++finished;
        }).detach();
    }
    EXPECT_EQ(finished, 0);
    manager.wait_for_all();
    EXPECT_EQ(finished, 10);
    EXPECT_EQ(manager.stats().records, 0u);
}

void add_to(int& total, int amount) { total += amount; }

TEST(L02_Manager, ArgumentsAreDecayCopiedMoveOnlyOnesMovedAndStdRefPassesAReference) {
    fib::FiberManager manager;
    std::string word = "before", seen;
    fib::Fiber reader([&seen](const std::string& copy) { seen = copy; }, word);
    // Changed after the spawn but before the fiber runs: the fiber has its own copy.
    word = "after";
    int total = 1, moved_in = 0;
    fib::Fiber adder(add_to, std::ref(total), 41);
    auto owned = std::make_unique<int>(7);
    fib::Fiber taker([&moved_in](std::unique_ptr<int> value) { moved_in = *value; },
                     std::move(owned));
    EXPECT_EQ(owned, nullptr);
    reader.join();
    adder.join();
    taker.join();
    EXPECT_EQ(seen, "before");
    EXPECT_EQ(total, 42);
    EXPECT_EQ(moved_in, 7);
    // As with std::thread, a reference parameter does not bind to the copy without std::ref.
    static_assert(!std::is_constructible_v<fib::Fiber, void (*)(int&, int), int&, int>);
    static_assert(std::is_constructible_v<fib::Fiber, void (*)(int&, int),
                                          std::reference_wrapper<int>, int>);
}

// Each link spawns the next and joins it: all links are alive at once, each blocked in join()
// on its own stack, so the depth costs no main-stack space.
void spawn_chain(int depth, int length, int& deepest) {
    deepest = std::max(deepest, depth);
    if (depth == length) return;
    fib::Fiber next(spawn_chain, depth + 1, length, std::ref(deepest));
    next.join();
}

TEST(L02_Manager, FibersSpawnAndJoinFibersInAChainOf1000) {
    fib::FiberManager manager;
    int deepest = 0;
    spawn_chain(0, 1000, deepest);
    EXPECT_EQ(deepest, 1000);
    EXPECT_EQ(manager.stats().finished, 1000u);
    EXPECT_EQ(manager.stats().stacks_created, 1000u);
    EXPECT_EQ(manager.stats().records, 0u);
}

TEST(L02_Manager, HundredThousandFibersInRoundsReuseThePeakNumberOfStacks) {
    fib::FiberManager manager;
    // vm.max_map_count (65530) allows about 32k live stacks (two mappings each), so the 100,000
    // fibers run in 100 rounds of 1,000. Each yields once, so a whole round is alive at once.
    // Under ASan (make SAN=1 test) each fiber also maps and unmaps a fake stack of its own,
    // and under TSan (make TSAN=1) it is a TSan fiber with state of its own: 100 rounds take
    // over a minute, so there 10 rounds run: 10,000 fibers; under TSan, where even those took
    // 15 s on the 2-core machine, 2 rounds (the second reuses the first one's stacks).
#if UNDER_THREAD_SANITIZER
    constexpr int kRounds = 2, kPerRound = 1000;
#elif UNDER_A_SANITIZER
    constexpr int kRounds = 10, kPerRound = 1000;
#else
    constexpr int kRounds = 100, kPerRound = 1000;
#endif
    long long sum = 0;
    for (int round = 0; round < kRounds; ++round) {
        for (int i = 0; i < kPerRound; ++i) {
            fib::Fiber([&sum, i] {
                fib::this_fiber::yield();
                sum += i;
            }).detach();
        }
        manager.wait_for_all();
        ASSERT_EQ(manager.stats().stacks_pooled, 1000u) << "after round " << round;
    }
    const fib::ManagerStats stats = manager.stats();
    EXPECT_EQ(sum, kRounds * (kPerRound - 1LL) * kPerRound / 2);
    EXPECT_EQ(stats.spawned, std::size_t{kRounds} * kPerRound);
    EXPECT_EQ(stats.finished, std::size_t{kRounds} * kPerRound);
    EXPECT_EQ(stats.records, 0u);
    EXPECT_EQ(stats.stacks_created, 1000u);
    EXPECT_EQ(stats.stacks_pooled, stats.stacks_created);
}

// The process's resident memory, from /proc/self/statm.
long resident_bytes() {
    std::ifstream statm("/proc/self/statm");
    long size = 0, resident = 0;
    statm >> size >> resident;
    return resident * ::sysconf(_SC_PAGESIZE);
}

// 4,000 fibers alive at once, each with 16 KiB of its stack in use, then all ended: the pool
// keeps the 4,000 stacks, but beyond its 64 warm ones each gives its pages back, once, and the
// process's memory comes back down. (Not under ASan, whose shadow of the stacks stays; under
// TSan, which checks only the counts, 400 fibers.)
TEST(L02_Manager, AfterABurstThePoolGivesTheColdStacksPagesBack) {
    constexpr long kBurst = fewer_under_thread_sanitizer(4000);
    fib::FiberManager manager;
    [[maybe_unused]] const long before = resident_bytes();  // read only without ASan, below
    bool release = false;
    long touched = 0;
    std::vector<fib::Fiber> fibers;
    for (long i = 0; i < kBurst; ++i)
        fibers.emplace_back([&release, &touched] {
            volatile char used[16 * 1024];
            for (std::size_t at = 0; at < sizeof used; at += 4096) used[at] = 1;
            ++touched;
            while (!release) fib::this_fiber::yield();
            used[0] = 2;
        });
    // Every fiber has run and touched its 16 KiB (one yield is enough in FIFO order).
    fib_test::yield_until([&touched] { return touched == kBurst; });
    [[maybe_unused]] const long during = resident_bytes();
    release = true;
    for (fib::Fiber& fiber : fibers) fiber.join();
    const fib::ManagerStats stats = manager.stats();
    EXPECT_EQ(stats.stacks_pooled, static_cast<std::size_t>(kBurst));
    EXPECT_EQ(stats.stacks_trimmed, static_cast<std::size_t>(kBurst) - fib::StackPool::kWarm);
#if !UNDER_A_SANITIZER  // their own memory per fiber swamps the stacks' pages
    EXPECT_GT(during - before, kBurst * 16 * 1024);  // the burst's pages were resident
    EXPECT_LT(resident_bytes() - before, 16L * 1024 * 1024);  // and are mostly gone
#endif
}

// Fibers made one after another start at staggered offsets below their stack's top, not all
// at one offset in the page (create_fiber; lesson 2's APPENDIX says what that costs a yield).
// Each runs on the same pooled stack here, so only the stagger can move its first frame.
TEST(L02_Manager, FibersMadeOneAfterAnotherStartAtStaggeredOffsetsInTheirPages) {
    fib::FiberManager manager;
    const std::uintptr_t page = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
    std::vector<std::uintptr_t> offsets;
    for (int i = 0; i < 8; ++i)
        fib::Fiber([&] {
            offsets.push_back(reinterpret_cast<std::uintptr_t>(__builtin_frame_address(0)) % page);
        }).join();
    std::sort(offsets.begin(), offsets.end());
    EXPECT_EQ(std::unique(offsets.begin(), offsets.end()), offsets.end())
        << "two of 8 fibers in a row started at the same offset in their pages";
    EXPECT_EQ(manager.stats().stacks_created, 1u);
}

TEST(L02_Manager, FiberWithA256KiBStackCanUse200KiBOfIt) {
    fib::FiberManager manager;
    long sum = -1;
    fib::Fiber big({.name = "big", .stack_size = 256 * 1024}, [&sum] {
        volatile unsigned char buffer[200 * 1024];
        for (std::size_t i = 0; i < sizeof buffer; ++i) buffer[i] = static_cast<unsigned char>(i);
        sum = 0;
        for (std::size_t i = 0; i < sizeof buffer; ++i) sum += buffer[i];
    });
    big.join();
    // 800 runs of 0..255.
    EXPECT_EQ(sum, 800L * (255 * 256 / 2));
    // Only default-size stacks are pooled: this one was unmapped.
    EXPECT_EQ(manager.stats().stacks_created, 1u);
    EXPECT_EQ(manager.stats().stacks_pooled, 0u);
}

// Captured by a fiber's callable; when destroyed, logs the fiber it died on and how many fibers
// had finished by then. A moved-from probe logs nothing.
struct DestructionProbe {
    std::vector<LogEntry>* log;
    explicit DestructionProbe(std::vector<LogEntry>* into) : log(into) {}
    DestructionProbe(DestructionProbe&& other) noexcept : log(std::exchange(other.log, nullptr)) {}
    ~DestructionProbe() {
        if (!log) return;
        log->emplace_back(fib::this_fiber::id(), fib::FiberManager::current()->stats().finished);
    }
};

TEST(L02_Manager, CapturedObjectsAreDestroyedOnTheFiberBeforeJoinReturns) {
    fib::FiberManager manager;
    std::vector<LogEntry> destructions;
    fib::Fiber worker([probe = DestructionProbe(&destructions)] { fib::this_fiber::yield(); });
    EXPECT_TRUE(destructions.empty());
    worker.join();
    // Destroyed once, on fiber 1, before that fiber counted as finished.
    EXPECT_EQ(destructions, (std::vector<LogEntry>{{1, 0}}));
}

TEST(L02_Manager, DestructorWaitsForDetachedFibersStillRunning) {
    int finished = 0;
    {
        fib::FiberManager manager;
        for (int fiber = 0; fiber < 5; ++fiber) {
            fib::Fiber([&finished] {
                for (int step = 0; step < 3; ++step) fib::this_fiber::yield();
                ++finished;
            }).detach();
        }
        EXPECT_EQ(finished, 0);
    }
    EXPECT_EQ(finished, 5);
    EXPECT_EQ(fib::FiberManager::current(), nullptr);
}

TEST(L02_Manager, ThisFiberReportsIdAndNameAndMainIsFiberZeroNamedMain) {
    fib::FiberManager manager;
    EXPECT_EQ(fib::this_fiber::id(), 0u);
    EXPECT_STREQ(fib::this_fiber::name(), "main");
    std::vector<std::pair<std::uint64_t, std::string>> seen;
    auto report = [&seen] { seen.emplace_back(fib::this_fiber::id(), fib::this_fiber::name()); };
    fib::Fiber worker({.name = "worker"}, report);
    fib::Fiber anonymous(report);
    // Names are truncated to 31 bytes.
    fib::Fiber long_named({.name = "a-name-that-is-longer-than-31-bytes"}, report);
    worker.join();
    anonymous.join();
    long_named.join();
    EXPECT_EQ(worker.id(), 1u);
    // Ids follow spawn order; the order the fibers ran in does not matter here.
    std::sort(seen.begin(), seen.end());
    const std::vector<std::pair<std::uint64_t, std::string>> expected = {
        {1, "worker"}, {2, ""}, {3, "a-name-that-is-longer-than-31-b"}};
    EXPECT_EQ(seen, expected);
}

struct Item {
    int value = 0;
    fib::ListLink<Item> link;
};
using ItemList = fib::IntrusiveList<Item, &Item::link>;

std::vector<int> values_of(const ItemList& list) {
    std::vector<int> values;
    for (const Item* item = list.front(); item; item = ItemList::next(item))
        values.push_back(item->value);
    return values;
}

TEST(L02_IntrusiveList, PushBackPopFrontAndRemoveKeepOrderAndSize) {
    Item items[5];
    for (int i = 0; i < 5; ++i) items[i].value = i + 1;
    ItemList list;
    EXPECT_EQ(list.pop_front(), nullptr);
    for (Item& item : items) list.push_back(&item);
    EXPECT_EQ(values_of(list), (std::vector<int>{1, 2, 3, 4, 5}));
    // From the middle: the neighbours are linked to each other, the item's links are cleared.
    list.remove(&items[2]);
    EXPECT_EQ(values_of(list), (std::vector<int>{1, 2, 4, 5}));
    EXPECT_EQ(list.size(), 4u);
    EXPECT_EQ(items[2].link.prev, nullptr);
    EXPECT_EQ(items[2].link.next, nullptr);
    EXPECT_EQ(list.pop_front(), &items[0]);
    list.remove(&items[4]);
    list.push_back(&items[2]);
    EXPECT_EQ(values_of(list), (std::vector<int>{2, 4, 3}));
    EXPECT_EQ(list.size(), 3u);
    for (Item* expected : {&items[1], &items[3], &items[2]}) EXPECT_EQ(list.pop_front(), expected);
    EXPECT_TRUE(list.empty());
    EXPECT_EQ(list.size(), 0u);
}

}  // namespace
