// L12_critics_test.cpp — lesson 12: the percentile that the critics' numbers are read with.
//
// critics.hpp reports the p50, p99 and max of the tickers' lateness; these
// tests pin down which value "p99" is (nearest rank: the smallest value with
// at least 99 percent at or below it), on samples small enough to count by hand.
#include <gtest/gtest.h>

#include <vector>

#include "../lessons/12-structured-concurrency/critics.hpp"

namespace {

std::vector<double> one_to(int count) {
    std::vector<double> values;
    for (int value = 1; value <= count; ++value) values.push_back(value);
    return values;
}

TEST(L12_Percentile, OfOneToHundredIsTheValueOfThatRank) {
    const std::vector<double> values = one_to(100);
    EXPECT_EQ(critics::percentile(values, 1), 1);
    EXPECT_EQ(critics::percentile(values, 50), 50);
    EXPECT_EQ(critics::percentile(values, 99), 99);
    EXPECT_EQ(critics::percentile(values, 100), 100);
}

TEST(L12_Percentile, NinetyNinthOfTwoHundredLeavesTheTopTwoAbove) {
    EXPECT_EQ(critics::percentile(one_to(200), 99), 198);
}

TEST(L12_Percentile, ARankBetweenTwoValuesRoundsUp) {
    const std::vector<double> values = {10, 20, 30};
    EXPECT_EQ(critics::percentile(values, 1), 10);   // rank 0.03: the first
    EXPECT_EQ(critics::percentile(values, 50), 20);  // rank 1.5: the second
    EXPECT_EQ(critics::percentile(values, 99), 30);  // rank 2.97: the third
}

TEST(L12_Percentile, OfOneValueIsThatValue) {
    const std::vector<double> values = {7};
    EXPECT_EQ(critics::percentile(values, 1), 7);
    EXPECT_EQ(critics::percentile(values, 100), 7);
}

// One wake in 50 that is late by a blocking call: the p99 must show it.
TEST(L12_Latency, OneLateWakeInFiftyIsTheP99) {
    std::vector<double> lateness_us(49, 20.0);
    lateness_us.insert(lateness_us.begin() + 10, 20'000.0);
    const critics::Latency latency = critics::latency_of(lateness_us);
    EXPECT_EQ(latency.p50_us, 20.0);
    EXPECT_EQ(latency.p99_us, 20'000.0);
    EXPECT_EQ(latency.max_us, 20'000.0);
    EXPECT_EQ(latency.wakes, 50u);
}

TEST(L12_Latency, UnsortedValuesAreSortedFirst) {
    const critics::Latency latency = critics::latency_of({5, 1, 4, 2, 3});
    EXPECT_EQ(latency.p50_us, 3);
    EXPECT_EQ(latency.p99_us, 5);
    EXPECT_EQ(latency.max_us, 5);
    EXPECT_EQ(latency.wakes, 5u);
}

TEST(L12_Latency, NoWakesIsAllZero) {
    const critics::Latency latency = critics::latency_of({});
    EXPECT_EQ(latency.p50_us, 0);
    EXPECT_EQ(latency.p99_us, 0);
    EXPECT_EQ(latency.max_us, 0);
    EXPECT_EQ(latency.wakes, 0u);
}

}  // namespace
