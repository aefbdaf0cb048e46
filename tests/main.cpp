// main.cpp — the test runner shared by every stage's test binary.
//
// Death tests run in a re-executed child ("threadsafe" style), so a child
// starts from a clean process rather than a fork of one with fibers mid-flight.
#include <gtest/gtest.h>

int main(int argc, char** argv) {
    testing::InitGoogleTest(&argc, argv);
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    return RUN_ALL_TESTS();
}
