// L02_ex1_pool_cap_test.cpp — lesson 2, exercise 1: a StackPool that keeps at most
// `max_pooled` stacks and unmaps the rest (include/02-fibers/fib/stack_pool.hpp).
#include <gtest/gtest.h>

#include <utility>
#include <vector>

#include "fib/stack_pool.hpp"

namespace {

constexpr std::size_t kSize = fib::Stack::kDefaultSize;

void take_and_give_back(fib::StackPool& pool, int count) {
    std::vector<fib::Stack> stacks;
    for (int i = 0; i < count; ++i) stacks.push_back(pool.take(kSize));
    for (fib::Stack& stack : stacks) pool.give_back(std::move(stack));
}

}  // namespace

TEST(L02_Ex1PoolCap, BeyondTheCapAStackHandedBackIsUnmappedAndCounted) {
    fib::StackPool pool(kSize, 4);
    take_and_give_back(pool, 10);
    EXPECT_EQ(pool.created(), 10u);
    EXPECT_EQ(pool.pooled(), 4u);
    EXPECT_EQ(pool.unmapped(), 6u);
}

TEST(L02_Ex1PoolCap, TheStacksKeptAreTakenAgainBeforeAnyIsMapped) {
    fib::StackPool pool(kSize, 4);
    take_and_give_back(pool, 10);
    take_and_give_back(pool, 4);
    EXPECT_EQ(pool.created(), 10u);
    take_and_give_back(pool, 6);
    EXPECT_EQ(pool.created(), 12u);
    EXPECT_EQ(pool.unmapped(), 8u);
}

TEST(L02_Ex1PoolCap, WithoutACapEveryStackIsKept) {
    fib::StackPool pool;
    take_and_give_back(pool, 100);
    EXPECT_EQ(pool.pooled(), 100u);
    EXPECT_EQ(pool.unmapped(), 0u);
}
