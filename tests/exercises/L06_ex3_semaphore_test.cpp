// L06_ex3_semaphore_test.cpp — lesson 6, exercise 3: the Semaphore with a timeout
// (lessons/06-time-and-events/exercises/ex3_semaphore/semaphore.hpp).
#include <gtest/gtest.h>

#include <chrono>
#include <vector>

#include "fib/fiber.hpp"
#include "fib/waiter.hpp"
#include "semaphore.hpp"

using namespace std::chrono_literals;

TEST(L06_Ex3Semaphore, PermitsAreTakenAtOnceWhileThereAreAny) {
    fib::FiberManager manager;
    fib::Waiter waiter;
    Semaphore slots(2);
    EXPECT_TRUE(slots.try_acquire_for(0ms));
    EXPECT_TRUE(slots.try_acquire_for(0ms));
    EXPECT_EQ(slots.available(), 0u);
    slots.release();
    EXPECT_EQ(slots.available(), 1u);
}

TEST(L06_Ex3Semaphore, AWaiterGetsThePermitOfTheNextRelease) {
    fib::FiberManager manager;
    fib::Waiter waiter;
    Semaphore slots(0);
    bool got = false;
    fib::Fiber taker([&] { got = slots.try_acquire_for(1h); });
    fib::this_fiber::yield();
    EXPECT_FALSE(got);
    slots.release();
    taker.join();
    EXPECT_TRUE(got);
    EXPECT_EQ(slots.available(), 0u);
}

TEST(L06_Ex3Semaphore, ATimedOutWaitTakesNothingAndTheNextReleaseGoesToTheNextWaiter) {
    fib::FiberManager manager;
    fib::Waiter waiter;
    Semaphore slots(0);
    std::vector<int> results;
    fib::Fiber impatient([&] { results.push_back(slots.try_acquire_for(5ms) ? 1 : -1); });
    fib::Fiber patient([&] { results.push_back(slots.try_acquire_for(1h) ? 2 : -2); });
    impatient.join();
    slots.release();
    patient.join();
    EXPECT_EQ(results, (std::vector<int>{-1, 2}));
    EXPECT_EQ(slots.available(), 0u);
}

TEST(L06_Ex3Semaphore, ACancelledWaitReturnsFalseAndTakesNothing) {
    fib::FiberManager manager;
    fib::Waiter waiter;
    Semaphore slots(0);
    int result = 0;
    fib::Fiber taker([&] { result = slots.try_acquire_for(1h) ? 1 : -1; });
    fib::this_fiber::yield();
    taker.cancel();
    taker.join();
    EXPECT_EQ(result, -1);
    slots.release();
    EXPECT_EQ(slots.available(), 1u);
}
