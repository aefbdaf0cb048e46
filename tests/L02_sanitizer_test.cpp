// L02_sanitizer_test.cpp — lesson 2: AddressSanitizer sees fibers right, under `make SAN=1 test`.
//
// The manager tells ASan about every switch (FiberManager::switch_to and
// finish_switch). Told wrongly, ASan either false-alarms — it warns when a throw
// unwinds a stack it does not believe is running — or misses bugs on fiber
// stacks. These tests check both directions; in a build without ASan they skip.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "fib/fiber.hpp"

#if defined(__SANITIZE_ADDRESS__)
#define SKIP_WITHOUT_ASAN()
#else
#define SKIP_WITHOUT_ASAN() GTEST_SKIP() << "runs under AddressSanitizer: make SAN=1 test"
#endif

namespace {

// A throw ends in __asan_handle_no_return, which checks that rsp lies on the
// stack ASan believes is running, and prints a warning if not.
TEST(L02_Sanitizer, ThrowingAcrossYieldsInFibersGivesAsanNoWarning) {
    SKIP_WITHOUT_ASAN();
    testing::internal::CaptureStderr();
    {
        fib::FiberManager manager;
        int caught = 0;
        auto thrower = [&caught] {
            for (int round = 0; round < 3; ++round) {
                try {
                    throw std::runtime_error("round");
                } catch (const std::runtime_error&) {
                    fib::this_fiber::yield();
                    ++caught;
                }
            }
        };
        fib::Fiber first(thrower), second(thrower);
        first.join();
        second.join();
        EXPECT_EQ(caught, 6);
    }
    const std::string errors = testing::internal::GetCapturedStderr();
    EXPECT_EQ(errors.find("ASan"), std::string::npos) << errors;
    EXPECT_EQ(errors.find("AddressSanitizer"), std::string::npos) << errors;
}

// Writes one element past the end of a local array, through a pointer the
// compiler cannot see through.
[[gnu::noinline]] void write_past(volatile char* array, int index) { array[index] = 1; }

TEST(L02_SanitizerDeathTest, StackBufferOverflowOnAFiberStackIsReported) {
    SKIP_WITHOUT_ASAN();
    EXPECT_DEATH(
        {
            fib::FiberManager manager;
            fib::Fiber writer([] {
                volatile char array[16];
                write_past(array, 16);
            });
            writer.join();
        },
        "AddressSanitizer: stack-buffer-overflow");
}

}  // namespace

// Under ThreadSanitizer (make TSAN=1) each fiber is a TSan fiber, and every switch announces
// itself (sanitizer.hpp), which orders what the fibers of one thread do: three fibers adding
// to one plain counter, yielding between their turns, is no race, and must not be reported
// (had the switches said "no_sync", it would be). Without TSan it only adds.
TEST(L02_Sanitizer, FibersOfOneThreadSharingAPlainCounterAreNoRace) {
    fib::FiberManager manager;
    long counter = 0;
    std::vector<fib::Fiber> fibers;
    for (int f = 0; f < 3; ++f)
        fibers.emplace_back([&counter] {
            for (int i = 0; i < 1000; ++i) {
                counter += 1;
                fib::this_fiber::yield();
            }
        });
    for (fib::Fiber& fiber : fibers) fiber.join();
    EXPECT_EQ(counter, 3000);
}
