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
