// L02_ex4_pipeline_test.cpp — lesson 2, exercise 4: the pipeline
// (lessons/02-fibers/exercises/ex4_pipeline/pipeline.hpp) gives the same items in FIFO order
// and under every seed of FIB_SCHEDULE_SEED.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "L02_schedule.hpp"
#include "fib/fiber_manager.hpp"
#include "pipeline.hpp"

namespace {

const std::vector<int> kInputs{1, 2, 3, 4, 5, 6};
const std::vector<int> kItems{2, 4, 6, 8, 10, 12};

}  // namespace

TEST(L02_Ex4Pipeline, InFifoOrderTheConsumerTakesEveryItem) {
    fib_test::ScheduleSeed fifo(nullptr);
    fib::FiberManager manager;
    EXPECT_EQ(run_pipeline(kInputs), kItems);
}

TEST(L02_Ex4Pipeline, UnderEverySeedTheConsumerTakesEveryItem) {
    for (int seed = 1; seed <= 32; ++seed) {
        const std::string text = std::to_string(seed);
        fib_test::ScheduleSeed shuffled(text.c_str());
        fib::FiberManager manager;
        EXPECT_EQ(run_pipeline(kInputs), kItems) << "FIB_SCHEDULE_SEED=" << seed;
    }
}
