// L08_ex3_offload_each_test.cpp — lesson 8, exercise 3: offload_each
// (lessons/08-offload/exercises/ex3_offload_each/offload_each.hpp).
#include <gtest/gtest.h>

#include <atomic>
#include <stdexcept>
#include <string>
#include <vector>

#include "L08_gate.hpp"
#include "fib/fiber.hpp"
#include "fib/waiter.hpp"
#include "offload_each.hpp"

namespace {

using l08::Gate;

}  // namespace

TEST(L08_Ex3OffloadEach, ResultsComeBackInTheInputsOrder) {
    fib::FiberManager manager;
    fib::Waiter waiter;
    fib::ThreadPool pool(3);
    const std::vector<int> inputs{5, 1, 4, 2, 3};
    EXPECT_EQ(offload_each(pool, inputs, [](int n) { return std::string(n, '*'); }),
              (std::vector<std::string>{"*****", "*", "****", "**", "***"}));
}

// Every piece is under way before any result is in: the work waits at a gate that another
// fiber opens only after it has looked how many pieces were started.
TEST(L08_Ex3OffloadEach, EveryPieceIsUnderWayBeforeTheFirstResultIsWaitedFor) {
    fib::FiberManager manager;
    fib::Waiter waiter;
    fib::ThreadPool pool(4);
    Gate gate;
    const std::size_t started_before = fib::offload_stats().started;
    std::size_t started_when_looked = 0;
    fib::Fiber looker([&] {
        started_when_looked = fib::offload_stats().started - started_before;
        gate.release();
    });
    const std::vector<int> inputs{1, 2, 3, 4};
    const std::vector<int> results = offload_each(pool, inputs, [&](int n) {
        gate.wait();
        return n * 10;
    });
    looker.join();
    EXPECT_EQ(started_when_looked, 4u);
    EXPECT_EQ(results, (std::vector<int>{10, 20, 30, 40}));
}

TEST(L08_Ex3OffloadEach, AnExceptionReachesTheCallerOnceEveryPieceHasFinished) {
    fib::FiberManager manager;
    fib::Waiter waiter;
    fib::ThreadPool pool(2);
    std::atomic<int> finished{0};
    const std::vector<int> inputs{1, 2, 3};
    EXPECT_THROW(offload_each(pool, inputs,
                              [&](int n) {
                                  ++finished;
                                  if (n == 1) throw std::runtime_error("bad input");
                                  return n;
                              }),
                 std::runtime_error);
    EXPECT_EQ(finished.load(), 3);
}
