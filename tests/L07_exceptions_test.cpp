// L07_exceptions_test.cpp — lesson 7: C++ exceptions in fibers with TLS blocks of their own.
//
// libstdc++ keeps the exceptions being caught and thrown in __cxa_eh_globals,
// a thread_local it reaches through the DTV. Each fiber's block has a DTV of
// its own, so each fiber has its own globals: a bare `throw;` after a yield
// rethrows the fiber's own exception, and std::uncaught_exceptions() counts
// only the fiber's own unwinding.
#include <cxxabi.h>
#include <gtest/gtest.h>

#include <array>
#include <exception>
#include <stdexcept>
#include <string>
#include <vector>

#include "L02_schedule.hpp"
#include "fib/fiber.hpp"
#include "fib/fiber_tls.hpp"
#include "L07_run_fibers.hpp"

namespace {

using fib::this_fiber::yield;

using l06::run_fibers;

// Fiber i throws i + 1, yields inside the catch block (the other fiber throws
// and catches its own meanwhile), then rethrows with a bare `throw;`.
TEST(L07_Exceptions, BareThrowAfterAYieldRethrowsTheFibersOwnException) {
    EXPECTS_FIFO_ORDER();
    fib::FiberManager manager;
    fib::FiberTls tls(manager);
    std::vector<std::string> log;
    run_fibers(2, [&](int i) {
        try {
            try {
                throw i + 1;
            } catch (int) {
                log.push_back("caught " + std::to_string(i + 1));
                yield();
                throw;
            }
        } catch (int rethrown) {
            log.push_back(std::to_string(i + 1) + " rethrew " + std::to_string(rethrown));
        }
    });
    EXPECT_EQ(log, (std::vector<std::string>{"caught 1", "caught 2", "1 rethrew 1", "2 rethrew 2"}));
}

// Runs while an exception unwinds through its scope, and yields there.
struct YieldingGuard {
    std::array<int, 2>* counts;
    ~YieldingGuard() {
        (*counts)[0] = std::uncaught_exceptions();
        yield();
        (*counts)[1] = std::uncaught_exceptions();
    }
};

TEST(L07_Exceptions, UncaughtExceptionsInADestructorDuringUnwindingIsPerFiber) {
    fib::FiberManager manager;
    fib::FiberTls tls(manager);
    std::array<int, 2> in_guard{-1, -1};
    int seen_by_other = -1;
    std::string caught;
    run_fibers(2, [&](int i) {
        if (i == 1) {
            seen_by_other = std::uncaught_exceptions();  // while fiber 0 is mid-unwind
            return;
        }
        try {
            YieldingGuard guard{&in_guard};
            throw std::runtime_error("unwinding");
        } catch (const std::runtime_error& error) {
            caught = error.what();
        }
    });
    EXPECT_EQ(caught, "unwinding");
    EXPECT_EQ(in_guard, (std::array<int, 2>{1, 1}));
    EXPECT_EQ(seen_by_other, 0);
    EXPECT_EQ(std::uncaught_exceptions(), 0);
}

// The fiber's own DTV gives libstdc++ its own __cxa_eh_globals per fiber.
TEST(L07_Exceptions, EachFiberHasItsOwnCxxExceptionGlobals) {
    fib::FiberManager manager;
    fib::FiberTls tls(manager);
    std::array<const void*, 2> globals{};
    run_fibers(2, [&](int i) {
        globals[i] = abi::__cxa_get_globals();
        yield();  // both alive at once: two distinct blocks
    });
    const void* main_globals = abi::__cxa_get_globals();
    EXPECT_NE(globals[0], main_globals);
    EXPECT_NE(globals[1], main_globals);
    EXPECT_NE(globals[0], globals[1]);
}

}  // namespace
