// L09_ex4_call_test.cpp — lesson 9, exercise 4: call() runs the function on the thread it names
// and brings the value or the exception home; the caller's thread goes on meanwhile; a
// cancelled caller stops waiting at once, and the late result harms nothing.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <latch>
#include <stdexcept>
#include <string>
#include <system_error>

#include "call.hpp"
#include "fib/fiber.hpp"
#include "fib/timer.hpp"

using namespace std::chrono_literals;

TEST(L09_Ex4Call, TheFunctionRunsOnTheThreadNamedAndItsValueComesHome) {
    fib::Cluster cluster({.threads = 2});
    pid_t caller = 0, ran_on = 0, resumed_on = 0, thread_1 = 0;
    std::string got;
    cluster.run([&](std::size_t index) {
        if (index == 1) {
            thread_1 = ::gettid();
            return;
        }
        caller = ::gettid();
        got = call(cluster, 1, [&] {
            ran_on = ::gettid();
            return std::string("from thread ") + std::to_string(fib::Cluster::this_thread_index());
        });
        resumed_on = ::gettid();
    });
    EXPECT_EQ(got, "from thread 1");
    EXPECT_NE(ran_on, caller);
    EXPECT_EQ(resumed_on, caller);
}

TEST(L09_Ex4Call, TheFunctionsExceptionIsRethrownOnTheCallersThread) {
    fib::Cluster cluster({.threads = 2});
    std::string message;
    cluster.run([&](std::size_t index) {
        if (index != 0) return;
        try {
            call(cluster, 1, []() -> int { throw std::runtime_error("thread 1 failed"); });
        } catch (const std::runtime_error& error) {
            message = error.what();
        }
    });
    EXPECT_EQ(message, "thread 1 failed");
}

// While thread 1 takes 50 ms, another fiber of thread 0 keeps ticking.
TEST(L09_Ex4Call, TheCallersOtherFibersRunWhileItWaits) {
    fib::Cluster cluster({.threads = 2});
    int ticks_during = 0;
    cluster.run([&](std::size_t index) {
        if (index != 0) return;
        bool waiting = true;
        fib::Fiber ticker([&] {
            while (waiting) {
                fib::sleep_for(2ms);
                ++ticks_during;
            }
        });
        const int value = call(cluster, 1, [] {
            fib::sleep_for(50ms);
            return 7;
        });
        waiting = false;
        ticker.join();
        EXPECT_EQ(value, 7);
    });
    EXPECT_GE(ticks_during, 5);
}

// The caller is cancelled while thread 1 still works; it stops waiting with ECANCELED, its
// frame is gone when the result comes, and that harms nothing (make SAN=1 sees it if it did).
TEST(L09_Ex4Call, ACancelledCallerStopsWaitingAndTheLateResultHarmsNothing) {
    fib::Cluster cluster({.threads = 2});
    std::atomic<int> error_code{0};
    std::latch finished(1);
    cluster.run([&](std::size_t index) {
        if (index != 0) return;
        fib::Fiber caller([&] {
            try {
                call(cluster, 1, [&] {
                    fib::sleep_for(100ms);
                    return std::string(1000, 'x');
                });
            } catch (const std::system_error& error) {
                error_code = error.code().value();
            }
        });
        fib::sleep_for(10ms);
        caller.cancel();
        caller.join();
        EXPECT_EQ(error_code.load(), ECANCELED);
        // The late result arrives on this thread's Event after the caller is gone.
        cluster.post(1, [&] { finished.count_down(); });
        while (!finished.try_wait()) fib::sleep_for(5ms);
        fib::sleep_for(150ms);
    });
    EXPECT_EQ(error_code.load(), ECANCELED);
}
