// L01_watchdog_test.cpp — the test runner's watchdog (tests/main.cpp), from stage 1 on: a test
// that hangs is stopped, named, and ends its binary with status 124.
#include <gtest/gtest.h>
#include <unistd.h>

namespace {

// The child sleeps for ever; its watchdog alarm, brought forward to 1 s, must end it.
TEST(L01_WatchdogDeathTest, AHungTestIsStoppedAndNamed) {
    EXPECT_EXIT(
        {
            ::alarm(1);
            for (;;) ::pause();
        },
        ::testing::ExitedWithCode(124),
        "watchdog: L01_WatchdogDeathTest.AHungTestIsStoppedAndNamed did not finish within [0-9]+ s");
}

}  // namespace
