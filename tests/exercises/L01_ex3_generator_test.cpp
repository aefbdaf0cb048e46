// L01_ex3_generator_test.cpp — lesson 1, exercise 3: the Fibonacci generator
// (lessons/01-context-switch/exercises/ex3_generator/).
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "fibonacci.hpp"

TEST(L01_Ex3Generator, TheFirstTwentyNumbersComeOneAtATime) {
    Fibonacci numbers;
    std::vector<std::uint64_t> got;
    for (int i = 0; i < 20; ++i) got.push_back(numbers.next());
    const std::vector<std::uint64_t> expected{0,   1,   1,   2,   3,   5,   8,    13,   21,   34,
                                              55,  89,  144, 233, 377, 610, 987, 1597, 2584, 4181};
    EXPECT_EQ(got, expected);
}

// Lazy: the loop makes a number only when asked, and makes it on its own stack.
TEST(L01_Ex3Generator, EachNumberIsMadeWhenAskedOnTheGeneratorsOwnStack) {
    Fibonacci numbers;
    EXPECT_EQ(numbers.made(), 0u);
    for (std::size_t asked = 1; asked <= 5; ++asked) {
        numbers.next();
        EXPECT_EQ(numbers.made(), asked);
        const char* frame = static_cast<const char*>(numbers.loop_frame());
        EXPECT_GE(frame, static_cast<const char*>(numbers.stack().bottom()));
        EXPECT_LT(frame, static_cast<const char*>(numbers.stack().top()));
    }
}

// Each generator's state lives in its own context: two of them do not mix.
TEST(L01_Ex3Generator, TwoGeneratorsInterleavedEachKeepTheirOwnPlace) {
    Fibonacci first, second;
    for (int i = 0; i < 10; ++i) first.next();
    EXPECT_EQ(second.next(), 0u);
    EXPECT_EQ(first.next(), 55u);
    EXPECT_EQ(second.next(), 1u);
    EXPECT_EQ(first.next(), 89u);
}
