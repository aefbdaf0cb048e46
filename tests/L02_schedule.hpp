// L02_schedule.hpp — lesson 2: what tests need from FIB_SCHEDULE_SEED, the shuffled ready queue.
//
// `make test-shuffled` runs every suite with FIB_SCHEDULE_SEED set, so the ready
// queue hands out fibers in a seeded order instead of FIFO. A test whose expected
// result is one particular order (the FIFO one, say "a, b, a, b") opens with
// EXPECTS_FIFO_ORDER() and is skipped there; every other test must pass under
// any order the program allows.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>
#include <string>

#include "fib/fiber_manager.hpp"

#define EXPECTS_FIFO_ORDER()                                                                   \
    do {                                                                                       \
        if (std::getenv("FIB_SCHEDULE_SEED"))                                                  \
            GTEST_SKIP() << "expects the ready queue's FIFO order; FIB_SCHEDULE_SEED is set"; \
    } while (0)

namespace fib_test {

// Sets FIB_SCHEDULE_SEED (or removes it, for nullptr) for the managers created in
// its scope, and puts the caller's value back at the end.
class ScheduleSeed {
public:
    explicit ScheduleSeed(const char* value) {
        if (const char* old = std::getenv("FIB_SCHEDULE_SEED")) saved_ = old;
        if (value)
            ::setenv("FIB_SCHEDULE_SEED", value, 1);
        else
            ::unsetenv("FIB_SCHEDULE_SEED");
    }
    ~ScheduleSeed() {
        if (saved_)
            ::setenv("FIB_SCHEDULE_SEED", saved_->c_str(), 1);
        else
            ::unsetenv("FIB_SCHEDULE_SEED");
    }
    ScheduleSeed(const ScheduleSeed&) = delete;
    ScheduleSeed& operator=(const ScheduleSeed&) = delete;

private:
    std::optional<std::string> saved_;
};

// Yields until `done()` holds: the way to wait for another fiber's progress
// without assuming how many turns it takes. Bounded: fails the test after
// `limit` yields instead of hanging.
template <typename Condition>
bool yield_until(Condition done, int limit = 100000) {
    for (int turns = 0; turns < limit; ++turns) {
        if (done()) return true;
        fib::this_fiber::yield();
    }
    ADD_FAILURE() << "the condition did not hold after " << limit << " yields";
    return false;
}

}  // namespace fib_test
