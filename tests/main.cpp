// main.cpp — the test runner shared by every stage's test binary.
//
// Death tests run in a re-executed child ("threadsafe" style), so a child
// starts from a clean process rather than a fork of one with fibers mid-flight.
// Under qemu-user (make ARCH=aarch64 on x86-64) a child cannot re-execute the
// binary (the kernel does not know how to run it), so there it is a plain fork
// ("fast" style) of the process at the death test.
//
// A watchdog bounds every test: one that runs longer than FIB_TEST_TIMEOUT
// seconds (default 180) is stopped with a line naming it, and the binary exits
// with status 124, so a hang ends `make test` with a hint instead of never. It
// is the process's real-time timer (SIGALRM), re-armed as each test starts,
// rather than a thread: a thread of its own would change what the tests see
// (some tests watch what happens when a process starts its first thread). A
// forked child re-arms it.
#include <gtest/gtest.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include "L01_emulator.hpp"

namespace {

unsigned timeout_seconds = 180;
char message[640];  // what the alarm prints, written as each test starts
std::size_t message_length = 0;

// Only async-signal-safe calls: write(2) and _exit(2).
void on_alarm(int) {
    [[maybe_unused]] ssize_t written = ::write(STDERR_FILENO, message, message_length);
    ::_exit(124);
}

void arm(const char* test) {
    const int length = std::snprintf(message, sizeof message,
                                     "\nwatchdog: %s did not finish within %u s (FIB_TEST_TIMEOUT); "
                                     "stopping the test binary\n",
                                     test, timeout_seconds);
    message_length = static_cast<std::size_t>(length) < sizeof message ? length : sizeof message - 1;
    ::alarm(timeout_seconds);
}

class Watchdog : public testing::EmptyTestEventListener {
    void OnTestStart(const testing::TestInfo& test) override {
        char name[512];
        std::snprintf(name, sizeof name, "%s.%s", test.test_suite_name(), test.name());
        arm(name);
    }
    void OnTestEnd(const testing::TestInfo&) override { ::alarm(0); }
};

}  // namespace

int main(int argc, char** argv) {
    testing::InitGoogleTest(&argc, argv);
    GTEST_FLAG_SET(death_test_style, l01::under_emulator() ? "fast" : "threadsafe");
    if (const char* seconds = std::getenv("FIB_TEST_TIMEOUT")) timeout_seconds = std::atoi(seconds);
    if (timeout_seconds > 0) {
        struct sigaction action {};
        action.sa_handler = on_alarm;
        sigaction(SIGALRM, &action, nullptr);
        testing::UnitTest::GetInstance()->listeners().Append(new Watchdog);
        // fork(2) leaves the child no alarm. A forked child (a death test's under
        // qemu, or one a test makes) arms its own, so that one that hangs is
        // stopped and named too, rather than outliving the binary that waited.
        pthread_atfork(nullptr, nullptr, [] { ::alarm(timeout_seconds); });
        // A death test's child hears no test events: its filter names its one test.
        if (!GTEST_FLAG_GET(internal_run_death_test).empty()) arm(GTEST_FLAG_GET(filter).c_str());
    }
    return RUN_ALL_TESTS();
}
