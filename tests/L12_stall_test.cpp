// L12_stall_test.cpp — lesson 12: the stall detector. A fiber spinning past the threshold is
// reported once, by name, while it runs, with its last wait and a backtrace that starts in the
// spinning code; fibers that yield often and an echo run over loopback are not reported;
// FIB_STALL_MS gives every manager a detector, which goes away with it, signal action and all.
#include <gtest/gtest.h>
#include <signal.h>
#include <time.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "L04_echo_harness.hpp"
#include "fib/fiber.hpp"
#include "fib/stall_detector.hpp"

namespace {

using namespace std::chrono_literals;
constexpr auto kThreshold = 20ms;

std::uint64_t thread_cpu_us() {
    timespec now{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
    return static_cast<std::uint64_t>(now.tv_sec) * 1000000 + static_cast<std::uint64_t>(now.tv_nsec) / 1000;
}

// ThreadSanitizer holds an asynchronous signal back until the thread's next intercepted libc
// call or atomic operation (the spin below makes both when it looks at the clock and the
// count), and runs the handler from inside its runtime: the backtrace then starts there, with
// the spin further down.
#if defined(__SANITIZE_THREAD__)
constexpr int kFramesAboveTheSpin = 48;
#else
constexpr int kFramesAboveTheSpin = 4;
#endif

// Spins on the CPU without a switch until `reports` says one more stall was reported, then
// `extra_us` of CPU time more; gives up after 20 s of CPU. Returns the reports seen as it ended.
// Not inlined, so that the backtrace's first frame is in this function.
using ReportCount = std::uint64_t (*)(const fib::StallDetector* detector);
std::uint64_t reports_of(const fib::StallDetector* detector) { return detector->reports(); }
std::uint64_t reports_of_all(const fib::StallDetector*) { return fib::stall_reports(); }

[[gnu::noinline]] std::uint64_t spin_until_reported(ReportCount reports, const fib::StallDetector* detector,
                                                    std::uint64_t extra_us) {
    const std::uint64_t before = reports(detector);
    const std::uint64_t start = thread_cpu_us();
    std::uint64_t reported_at = 0;
    volatile std::uint64_t work = 0;
    for (std::uint64_t now = start; now - start < 20000000; now = thread_cpu_us()) {
        for (int i = 0; i < 100000; ++i) work = work + 1;
        if (reported_at == 0 && reports(detector) != before) reported_at = now;
        if (reported_at != 0 && now - reported_at >= extra_us) break;
    }
    return reports(detector) - before;
}

// A scoped FIB_STALL_MS, put back as it was (make test-lesson12 may set it for the whole run).
struct StallEnvironment {
    explicit StallEnvironment(const char* value) {
        if (const char* old = std::getenv("FIB_STALL_MS")) previous = old, had_one = true;
        setenv("FIB_STALL_MS", value, 1);
    }
    ~StallEnvironment() {
        if (had_one) setenv("FIB_STALL_MS", previous.c_str(), 1);
        else unsetenv("FIB_STALL_MS");
    }
    std::string previous;
    bool had_one = false;
};

// The address in a backtrace_symbols_fd line, "binary(+0x1a2b)[0x55d0c6a8e2e1]".
std::uintptr_t address_in(const std::string& line) {
    const auto open = line.rfind("[0x");
    return open == std::string::npos ? 0 : std::strtoull(line.c_str() + open + 1, nullptr, 16);
}

TEST(L12_Stall, ASpinningFiberIsReportedOnceByNameWhileItRunsWithABacktraceOfTheSpin) {
    fib::FiberManager manager;
    fib::StallDetector detector(manager, kThreshold);
    std::string label;
    std::uint64_t seen_while_running = 0;
    testing::internal::CaptureStderr();
    fib::Fiber spinner(fib::FiberOptions{.name = "spinner"}, [&] {
        label = fib::label(*manager.running()).text;
        // After the report, spin five thresholds more: a second report would come in them.
        seen_while_running = spin_until_reported(reports_of, &detector, 5 * 20000);
    });
    spinner.join();
    const std::string output = testing::internal::GetCapturedStderr();
    EXPECT_EQ(seen_while_running, 1u);
    EXPECT_EQ(detector.reports(), 1u);
    EXPECT_EQ(label, "fiber 1 (spinner)");
    EXPECT_NE(output.find("fib: stall: fiber 1 (spinner) has run for "), std::string::npos) << output;
    EXPECT_NE(output.find("(it has not waited since its start)\n"), std::string::npos) << output;
    // The backtrace starts at the interrupted instruction: in the spin, or now and then in
    // the clock reading it calls (clock_gettime, ASan's interceptor, thread_cpu_us), with
    // the spin under it. Without the handler's frames cut off, the spin would come later.
    // (Under TSan, see kFramesAboveTheSpin.)
    const auto spin = reinterpret_cast<std::uintptr_t>(&spin_until_reported);
    std::size_t at = output.find('\n') + 1;
    bool spin_on_top = false;
    for (int frame = 0; frame < kFramesAboveTheSpin && at < output.size(); ++frame, at = output.find('\n', at) + 1) {
        const std::uintptr_t address = address_in(output.substr(at, output.find('\n', at) - at));
        spin_on_top = spin_on_top || (address >= spin && address < spin + 4096);
    }
    EXPECT_TRUE(spin_on_top) << output;
}

TEST(L12_Stall, TheReportNamesTheLastWaitTheSpinningFiberReturnedFrom) {
    fib::FiberManager manager;
    fib::StallDetector detector(manager, kThreshold);
    testing::internal::CaptureStderr();
    fib::Fiber spinner(fib::FiberOptions{.name = "after-join"}, [&] {
        fib::Fiber helper([] { fib::this_fiber::yield(); });
        helper.join();
        spin_until_reported(reports_of, &detector, 0);
    });
    spinner.join();
    const std::string output = testing::internal::GetCapturedStderr();
    EXPECT_EQ(detector.reports(), 1u);
    EXPECT_NE(output.find("fib: stall: fiber 1 (after-join) has run for "), std::string::npos) << output;
    EXPECT_NE(output.find("(its last wait: join)\n"), std::string::npos) << output;
}

// A worker computes for ten thresholds of CPU time in short steps, yielding after each to a
// partner that yields straight back. Nearly every tick lands in the worker, so only the switch
// count, which moves between any two ticks, tells that it is not stalled.
TEST(L12_Stall, AFiberThatYieldsOftenIsNotReported) {
    fib::FiberManager manager;
    fib::StallDetector detector(manager, kThreshold);
    const std::uint64_t start = thread_cpu_us();
    bool done = false;
    fib::Fiber worker(fib::FiberOptions{.name = "worker"}, [&] {
        volatile std::uint64_t work = 0;
        for (int step = 0; step < 10000000 && thread_cpu_us() - start < 10 * 20000; ++step) {
            for (int i = 0; i < 20000; ++i) work = work + 1;
            fib::this_fiber::yield();
        }
        done = true;
    });
    fib::Fiber partner([&] {
        for (int turn = 0; turn < 10000000 && !done; ++turn) fib::this_fiber::yield();
    });
    worker.join();
    partner.join();
    EXPECT_GE(thread_cpu_us() - start, 10u * 20000);
    EXPECT_EQ(detector.reports(), 0u);
}

// The "already reported" mark lasts until the next switch: a fiber that stalls, switches away
// and back, and stalls again is reported twice.
TEST(L12_Stall, TwoStallsWithASwitchBetweenAreReportedOnceEach) {
    fib::FiberManager manager;
    fib::StallDetector detector(manager, kThreshold);
    testing::internal::CaptureStderr();
    std::uint64_t first = 0, second = 0;
    fib::Fiber spinner(fib::FiberOptions{.name = "twice"}, [&] {
        first = spin_until_reported(reports_of, &detector, 2 * 20000);
        fib::Fiber between([] {});  // joining it switches away and back
        between.join();
        second = spin_until_reported(reports_of, &detector, 2 * 20000);
    });
    spinner.join();
    testing::internal::GetCapturedStderr();
    EXPECT_EQ(first, 1u);
    EXPECT_EQ(second, 1u);
    EXPECT_EQ(detector.reports(), 2u);
}

TEST(L12_Stall, FibStallMsGivesEachNewManagerADetectorThatGoesAwayWithIt) {
    struct sigaction before {};
    sigaction(SIGRTMIN + 5, nullptr, &before);
    const std::size_t live_before = fib::live_stall_detectors();
    {
        StallEnvironment environment("20");
        fib::FiberManager manager;
        EXPECT_EQ(fib::live_stall_detectors(), live_before + 1);
        testing::internal::CaptureStderr();
        std::uint64_t reported = 0;
        fib::Fiber spinner(fib::FiberOptions{.name = "from-env"},
                           [&] { reported = spin_until_reported(reports_of_all, nullptr, 3 * 20000); });
        spinner.join();
        const std::string output = testing::internal::GetCapturedStderr();
        EXPECT_EQ(reported, 1u);
        EXPECT_NE(output.find("fib: stall: fiber 1 (from-env)"), std::string::npos) << output;
    }
    EXPECT_EQ(fib::live_stall_detectors(), live_before);
    struct sigaction after {};
    sigaction(SIGRTMIN + 5, nullptr, &after);
    EXPECT_EQ(after.sa_sigaction, before.sa_sigaction);
}

// Lesson 4's echo server on its thread and a client manager on this one, each with the
// detector FIB_STALL_MS gives it: fibers that wait for I/O never run a threshold long.
// The payloads are made before any manager exists: drawing 5 MB of random bytes is the
// test's own work, and under ThreadSanitizer it kept main busy past the 200 ms threshold.
TEST(L12_Stall, AnEchoRunWithEveryManagerWatchedReportsNothing) {
    std::mt19937_64 random(12);
    std::vector<l04_echo::Bytes> payloads;
    for (int i = 0; i < 40; ++i) payloads.push_back(l04_echo::random_bytes(1 + random() % (256 * 1024), random));
    StallEnvironment environment("200");
    const std::size_t live_before = fib::live_stall_detectors();
    const std::uint64_t reports_before = fib::stall_reports();
    l04_echo::EchoServerThread server;
    fib::FiberManager manager;
    fib::Waiter waiter;
    EXPECT_EQ(fib::live_stall_detectors(), live_before + 2);
    EXPECT_EQ(l04_echo::round_trips_at_once(server.port, payloads), 40);
    EXPECT_EQ(fib::stall_reports(), reports_before);
}

TEST(L12_StallDeathTest, ASecondDetectorOnOneThreadStops) {
    EXPECT_DEATH(
        {
            fib::FiberManager manager;
            fib::StallDetector first(manager, kThreshold);
            fib::StallDetector second(manager, kThreshold);
        },
        "a second StallDetector was made on a thread that has one");
}

TEST(L12_StallDeathTest, AManagerDestroyedUnderItsDetectorStops) {
    EXPECT_DEATH(
        {
            auto manager = std::make_unique<fib::FiberManager>();
            fib::StallDetector detector(*manager, kThreshold);
            manager.reset();
        },
        "the FiberManager was destroyed while a StallDetector still watches it");
}

TEST(L12_StallDeathTest, AThresholdThatIsNoNumberStops) {
    EXPECT_DEATH(
        {
            setenv("FIB_STALL_MS", "fast", 1);
            fib::FiberManager manager;
        },
        "FIB_STALL_MS=fast: give a stall threshold in milliseconds");
}

}  // namespace
