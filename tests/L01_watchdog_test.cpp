// L01_watchdog_test.cpp — the test runner's watchdog (tests/main.cpp), from stage 1 on: a test
// that hangs is stopped, named, and ends its binary with status 124; a forked child has one too.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>

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

// fork(2) clears the alarm in the child. A child a test forks, or a death test's under qemu
// ("fast" style, tests/main.cpp), arms its own: alarm(0) there returns what was left of it.
TEST(L01_Watchdog, AForkedChildHasAWatchdogToo) {
    const char* seconds = std::getenv("FIB_TEST_TIMEOUT");
    if (seconds && std::atoi(seconds) <= 0) GTEST_SKIP() << "FIB_TEST_TIMEOUT turns the watchdog off";
    const pid_t child = ::fork();
    if (child == 0) ::_exit(::alarm(0) > 0 ? 0 : 1);
    ASSERT_GT(child, 0);
    int status = -1;
    ASSERT_EQ(::waitpid(child, &status, 0), child);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "the child had no alarm armed";
}

}  // namespace
