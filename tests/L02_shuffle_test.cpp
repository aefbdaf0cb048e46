// L02_shuffle_test.cpp — lesson 2: FIB_SCHEDULE_SEED hands out ready fibers in a seeded order,
// the same order for the same seed, and every fiber still runs; a bad seed stops the program.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <vector>

#include "L02_schedule.hpp"
#include "fib/fiber.hpp"
#include "fib/shuffle.hpp"

namespace {

// Eight fibers each note their number at each of four turns; the order of the notes is
// the schedule.
std::vector<int> schedule_under(const char* seed) {
    fib_test::ScheduleSeed scope(seed);
    fib::FiberManager manager;
    std::vector<int> notes;
    for (int number = 0; number < 8; ++number)
        fib::Fiber([&notes, number] {
            for (int turn = 0; turn < 4; ++turn) {
                notes.push_back(number);
                fib::this_fiber::yield();
            }
        }).detach();
    manager.wait_for_all();
    return notes;
}

}  // namespace

TEST(L02_Shuffle, WithoutASeedTheReadyQueueIsFifo) {
    std::vector<int> expected;
    for (int turn = 0; turn < 4; ++turn)
        for (int number = 0; number < 8; ++number) expected.push_back(number);
    EXPECT_EQ(schedule_under(nullptr), expected);
}

TEST(L02_Shuffle, ASeedGivesTheSameScheduleEveryTime) {
    const std::vector<int> first = schedule_under("42");
    EXPECT_EQ(schedule_under("42"), first);
    EXPECT_NE(schedule_under("43"), first);
}

TEST(L02_Shuffle, UnderASeedEveryFiberRunsEveryTurnInAnotherOrder) {
    const std::vector<int> notes = schedule_under("1");
    ASSERT_EQ(notes.size(), 32u);
    for (int number = 0; number < 8; ++number)
        EXPECT_EQ(std::count(notes.begin(), notes.end(), number), 4) << "fiber " << number;
    EXPECT_NE(notes, schedule_under(nullptr));
}

// Any ready fiber can come next, not only one near the front: over many seeds, the
// first fiber to run after main yields is each of the four at least once.
TEST(L02_Shuffle, EveryReadyFiberCanBeTheNextOne) {
    std::vector<int> firsts(4, 0);
    for (int seed = 1; seed <= 64; ++seed) {
        const std::string text = std::to_string(seed);
        fib_test::ScheduleSeed scope(text.c_str());
        fib::FiberManager manager;
        int first = -1;
        for (int number = 0; number < 4; ++number)
            fib::Fiber([&first, number] {
                if (first < 0) first = number;
            }).detach();
        manager.wait_for_all();
        ++firsts[first];
    }
    for (int number = 0; number < 4; ++number) EXPECT_GT(firsts[number], 0) << "fiber " << number;
}

TEST(L02_Shuffle, NextRandomIsSplitmix64) {
    std::uint64_t state = 0;
    EXPECT_EQ(fib::next_random(state), 0xe220a8397b1dcdafULL);
    EXPECT_EQ(fib::next_random(state), 0x6e789e6aa1b965f4ULL);
}

void create_a_manager_under(const char* seed) {
    fib_test::ScheduleSeed scope(seed);
    fib::FiberManager manager;
    std::exit(0);
}

TEST(L02_ShuffleDeathTest, TheSeedIsPrintedWhenTheFirstManagerIsCreated) {
    EXPECT_EXIT(create_a_manager_under("7"), testing::ExitedWithCode(0),
                "fib: FIB_SCHEDULE_SEED=7: the ready queue hands out fibers in a shuffled order");
}

TEST(L02_ShuffleDeathTest, ASeedThatIsNotANumberStops) {
    EXPECT_DEATH(create_a_manager_under("banana"),
                 "fib: fatal: FIB_SCHEDULE_SEED=banana is not a seed; give a number");
    EXPECT_DEATH(create_a_manager_under("-1"), "FIB_SCHEDULE_SEED=-1 is not a seed");
    EXPECT_DEATH(create_a_manager_under("12x"), "FIB_SCHEDULE_SEED=12x is not a seed");
}
