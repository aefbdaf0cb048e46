// L03_ex3_wait_group_test.cpp — lesson 3, exercise 3: WaitGroup
// (lessons/03-condvar/exercises/ex3_wait_group/wait_group.hpp).
#include <gtest/gtest.h>

#include <vector>

#include "fib/fiber.hpp"
#include "wait_group.hpp"

TEST(L03_Ex3WaitGroup, WaitReturnsOnceEveryTaskIsDone) {
    fib::FiberManager manager;
    WaitGroup group;
    std::vector<int> order;
    group.add(3);
    for (int task = 1; task <= 3; ++task)
        fib::Fiber([&order, &group, task] {
            for (int i = 0; i < task; ++i) fib::this_fiber::yield();
            order.push_back(task);
            group.done();
        }).detach();
    group.wait();
    EXPECT_EQ(order, (std::vector<int>{1, 2, 3}));
    EXPECT_EQ(group.outstanding(), 0u);
}

TEST(L03_Ex3WaitGroup, WaitWithNothingOutstandingReturnsAtOnce) {
    fib::FiberManager manager;
    WaitGroup group;
    bool ran = false;
    fib::Fiber other([&] { ran = true; });
    group.wait();
    EXPECT_FALSE(ran);  // wait() did not switch
    other.join();
}

TEST(L03_Ex3WaitGroup, EveryWaiterWakesWhenTheLastTaskEnds) {
    fib::FiberManager manager;
    WaitGroup group;
    group.add(2);
    int woken = 0;
    fib::Fiber first([&] { group.wait(); ++woken; }), second([&] { group.wait(); ++woken; });
    fib::this_fiber::yield();
    group.done();
    fib::this_fiber::yield();
    EXPECT_EQ(woken, 0);
    EXPECT_EQ(group.outstanding(), 1u);
    group.done();
    first.join();
    second.join();
    EXPECT_EQ(woken, 2);
}
