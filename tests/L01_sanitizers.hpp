// L01_sanitizers.hpp — lesson 1 tests: which sanitizer a test binary was built with, for the few
// tests that cannot run under one, or must run smaller there. Each says why where it skips.
#pragma once

#include <gtest/gtest.h>

#if defined(__SANITIZE_THREAD__)
#define UNDER_THREAD_SANITIZER 1
#define SKIP_UNDER_THREAD_SANITIZER(why) \
    GTEST_SKIP() << "left out under ThreadSanitizer (make TSAN=1): " << (why)
#else
#define UNDER_THREAD_SANITIZER 0
#define SKIP_UNDER_THREAD_SANITIZER(why) \
    do {                                 \
    } while (0)
#endif

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define UNDER_A_SANITIZER 1  // built at -O1, with instrumented, slower code
#else
#define UNDER_A_SANITIZER 0
#endif

// The round count of a test that repeats a cross-thread hand-off (or makes a fiber, each a
// TSan fiber with state of its own) many times: a tenth of it under ThreadSanitizer, where
// such rounds cost far more, and the few such tests took half of the TSan run's time.
// TSan reports two threads' accesses that no synchronisation orders whenever both happen,
// not only when they collide, so every path of the hand-off is still checked hundreds of
// times; the full count, which hunts lost wake-ups by repetition, runs in make test, make
// SAN=1 test and make test-shuffled.
constexpr long fewer_under_thread_sanitizer(long rounds) {
    return UNDER_THREAD_SANITIZER ? rounds / 10 : rounds;
}
