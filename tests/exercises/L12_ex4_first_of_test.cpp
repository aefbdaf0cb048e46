// L12_ex4_first_of_test.cpp — lesson 12, exercise 4: first_of(a, b) runs both at once, returns
// the index of the first to end, cancels the other (wherever it waits), and returns only once
// both have ended; an exception is rethrown; a cancel of the caller reaches both.
#include <gtest/gtest.h>

#include <chrono>
#include <optional>
#include <stdexcept>

#include "fib/condvar.hpp"
#include "fib/scope.hpp"
#include "fib/waiter.hpp"
#include "first_of.hpp"

using namespace std::chrono_literals;

namespace {

TEST(L12_Ex4FirstOf, TheFirstToEndWinsAndTheOtherIsCancelled) {
    fib::FiberManager manager;
    fib::Waiter waiter;
    std::optional<bool> loser_slept;
    const int winner = first_of([&] { loser_slept = fib::sleep_for(1h); }, [] { fib::sleep_for(1ms); });
    EXPECT_EQ(winner, 1);
    EXPECT_EQ(loser_slept, std::optional<bool>(false));
    const int other = first_of([] { fib::this_fiber::yield(); }, [&] { loser_slept = fib::sleep_for(1h); });
    EXPECT_EQ(other, 0);
    EXPECT_EQ(waiter.timers().size(), 0u);
}

TEST(L12_Ex4FirstOf, ReturnsOnlyOnceTheLoserHasEnded) {
    fib::FiberManager manager;
    fib::Waiter waiter;
    bool loser_ended = false;
    fib::CondVar never_notified;
    first_of([] {},
             [&] {
                 try {
                     never_notified.wait();
                 } catch (const fib::Cancelled&) {
                 }
                 fib::this_fiber::yield();
                 loser_ended = true;
             });
    EXPECT_TRUE(loser_ended);
}

TEST(L12_Ex4FirstOf, AnExceptionIsRethrownAndTheOtherCancelled) {
    fib::FiberManager manager;
    fib::Waiter waiter;
    std::optional<bool> slept;
    EXPECT_THROW(first_of([&] { slept = fib::sleep_for(1h); },
                          [] {
                              fib::this_fiber::yield();
                              throw std::runtime_error("lost");
                          }),
                 std::runtime_error);
    EXPECT_EQ(slept, std::optional<bool>(false));
}

TEST(L12_Ex4FirstOf, ACancelOfTheCallerReachesBoth) {
    fib::FiberManager manager;
    fib::Waiter waiter;
    std::optional<bool> a_slept, b_slept;
    fib::Fiber caller([&] { first_of([&] { a_slept = fib::sleep_for(1h); }, [&] { b_slept = fib::sleep_for(1h); }); });
    for (int i = 0; i < 10 && waiter.timers().size() < 2; ++i) fib::this_fiber::yield();
    caller.cancel();
    caller.join();
    EXPECT_EQ(a_slept, std::optional<bool>(false));
    EXPECT_EQ(b_slept, std::optional<bool>(false));
}

}  // namespace
