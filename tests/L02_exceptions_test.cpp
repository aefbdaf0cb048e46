// L02_exceptions_test.cpp — lesson 2: exceptions and fibers. join() rethrows what escaped a
// fiber; each fiber keeps its own caught-exception stack and uncaught count across switches
// (the ExceptionState swap in FiberManager::switch_to); an exception escaping a detached fiber
// stops the program with a message naming the fiber.
#include <gtest/gtest.h>

#include <exception>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "L02_schedule.hpp"
#include "fib/exception_state.hpp"
#include "fib/fiber.hpp"

namespace {

struct ParseError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

TEST(L02_Exceptions, JoinRethrowsTheEscapedExceptionWithItsTypeAndMessage) {
    fib::FiberManager manager;
    fib::Fiber parser([] {
        fib::this_fiber::yield();
        throw ParseError("bad token at 7");
    });
    std::string message;
    try {
        parser.join();
    } catch (const ParseError& error) {
        message = error.what();
    }
    EXPECT_EQ(message, "bad token at 7");
    EXPECT_EQ(manager.stats().records, 0u);
}

struct ThrowsWhenCopied {
    ThrowsWhenCopied() = default;
    ThrowsWhenCopied(const ThrowsWhenCopied&) { throw std::runtime_error("copy failed"); }
};

// The argument is copied onto the new fiber's stack after the record was made: the record and
// the stack must be given back, and the exception must reach the spawner.
TEST(L02_Exceptions, ExceptionWhileCopyingAnArgumentPropagatesAndLeavesNoFiberBehind) {
    fib::FiberManager manager;
    ThrowsWhenCopied argument;
    EXPECT_THROW(fib::Fiber([](const ThrowsWhenCopied&) {}, argument), std::runtime_error);
    const fib::ManagerStats stats = manager.stats();
    EXPECT_EQ(stats.spawned, 0u);
    EXPECT_EQ(stats.records, 0u);
    EXPECT_EQ(stats.stacks_pooled, stats.stacks_created);
}

struct FirstError {
    static constexpr const char* kName = "FirstError";
};
struct SecondError {
    static constexpr const char* kName = "SecondError";
};

// Throws an Error, yields inside the catch block, then rethrows with a bare `throw;` and logs
// which type came out.
template <class Error>
void rethrow_after_yield(std::vector<std::string>& log) {
    try {
        try {
            throw Error{};
        } catch (...) {
            log.push_back(std::string(Error::kName) + " caught");
            fib::this_fiber::yield();
            throw;
        }
    } catch (const FirstError&) {
        log.push_back(std::string(Error::kName) + " rethrew FirstError");
    } catch (const SecondError&) {
        log.push_back(std::string(Error::kName) + " rethrew SecondError");
    }
}

TEST(L02_Exceptions, BareThrowAfterAYieldInACatchRethrowsTheFibersOwnException) {
    EXPECTS_FIFO_ORDER();
    fib::FiberManager manager;
    std::vector<std::string> log;
    fib::Fiber first(rethrow_after_yield<FirstError>, std::ref(log));
    fib::Fiber second(rethrow_after_yield<SecondError>, std::ref(log));
    first.join();
    second.join();
    // The second fiber caught its exception while the first was paused in its catch block, so
    // without a per-fiber swap the thread's caught-exception stack would have SecondError on
    // top when the first fiber rethrows.
    const std::vector<std::string> expected = {
        "FirstError caught", "SecondError caught", "FirstError rethrew FirstError",
        "SecondError rethrew SecondError"};
    EXPECT_EQ(log, expected);
}

// A destructor that runs while an exception unwinds through its scope, and yields there.
struct YieldingGuard {
    int* count_before_yield;
    int* count_after_yield;
    ~YieldingGuard() {
        *count_before_yield = std::uncaught_exceptions();
        fib::this_fiber::yield();
        *count_after_yield = std::uncaught_exceptions();
    }
};

TEST(L02_Exceptions, UncaughtExceptionsIsCountedPerFiber) {
    fib::FiberManager manager;
    int before = -1, after = -1, seen_by_other = -1;
    bool caught = false;
    fib::Fiber unwinding([&] {
        try {
            YieldingGuard guard{&before, &after};
            throw std::runtime_error("unwinding");
        } catch (const std::runtime_error&) {
            caught = true;
        }
    });
    // Runs while the first fiber is paused in the guard's destructor, mid-unwind.
    fib::Fiber other([&] { seen_by_other = std::uncaught_exceptions(); });
    unwinding.join();
    other.join();
    EXPECT_TRUE(caught);
    EXPECT_EQ(before, 1);
    EXPECT_EQ(after, 1);
    EXPECT_EQ(seen_by_other, 0);
}

TEST(L02_Exceptions, ExceptionStateMirrorTracksCaughtExceptionsLikeTheRuntime) {
    fib::FiberManager manager;
    const fib::ExceptionState* state = fib::thread_exception_state();
    EXPECT_EQ(state->caught_exceptions, nullptr);
    EXPECT_EQ(state->uncaught_exceptions, 0u);
    try {
        throw std::runtime_error("outer");
    } catch (const std::exception&) {
        void* outer = state->caught_exceptions;
        EXPECT_NE(outer, nullptr);
        // A nested catch pushes onto the caught stack; leaving it pops back to the outer one.
        try {
            throw std::logic_error("inner");
        } catch (const std::exception&) {
            EXPECT_NE(state->caught_exceptions, nullptr);
            EXPECT_NE(state->caught_exceptions, outer);
        }
        EXPECT_EQ(state->caught_exceptions, outer);
    }
    EXPECT_EQ(state->caught_exceptions, nullptr);
}

// Reads both views of the uncaught count from a destructor that runs during unwinding.
struct UnwindProbe {
    unsigned* mirrored;
    int* runtime;
    ~UnwindProbe() {
        *mirrored = fib::thread_exception_state()->uncaught_exceptions;
        *runtime = std::uncaught_exceptions();
    }
};

TEST(L02_Exceptions, ExceptionStateMirrorMatchesUncaughtExceptionsDuringUnwinding) {
    fib::FiberManager manager;
    unsigned mirrored = 99;
    int runtime = -1;
    try {
        UnwindProbe probe{&mirrored, &runtime};
        throw std::runtime_error("unwinding");
    } catch (const std::exception&) {
    }
    EXPECT_EQ(runtime, 1);
    EXPECT_EQ(mirrored, 1u);
    EXPECT_EQ(fib::thread_exception_state()->uncaught_exceptions, 0u);
}

TEST(L02_Exceptions, MainSeesNoCaughtExceptionWhileAFiberIsPausedInItsCatchBlock) {
    fib::FiberManager manager;
    const fib::ExceptionState* state = fib::thread_exception_state();
    void* before_yield = nullptr;
    void* after_yield = nullptr;
    fib::Fiber catcher([&] {
        try {
            throw std::runtime_error("held");
        } catch (const std::exception&) {
            before_yield = state->caught_exceptions;
            fib::this_fiber::yield();
            after_yield = state->caught_exceptions;
        }
    });
    // The catcher runs until its yield inside the catch block.
    fib::this_fiber::yield();
    ASSERT_NE(before_yield, nullptr);
    EXPECT_EQ(state->caught_exceptions, nullptr);
    catcher.join();
    EXPECT_EQ(after_yield, before_yield);
    EXPECT_EQ(state->caught_exceptions, nullptr);
}

void detached_fiber_throws() {
    fib::FiberManager manager;
    fib::Fiber({.name = "worker"}, [] { throw std::runtime_error("boom"); }).detach();
    manager.wait_for_all();
}

// The fiber throws first (main yields to it) and is detached only afterwards, while its
// exception waits in the record for a join that will never come.
void finished_fiber_with_exception_is_detached() {
    fib::FiberManager manager;
    fib::Fiber worker({.name = "worker"}, [] { throw std::runtime_error("boom"); });
    fib::this_fiber::yield();
    worker.detach();
}

TEST(L02_ExceptionsDeathTest, ExceptionEscapingADetachedFiberStopsTheProgramNamingIt) {
    EXPECT_DEATH(detached_fiber_throws(),
                 "fib: fatal: an exception of type std::runtime_error escaped detached fiber 1 "
                 "\\(worker\\): boom");
}

TEST(L02_ExceptionsDeathTest, DetachingAFinishedFiberWithAStoredExceptionStopsTheProgram) {
    EXPECT_DEATH(finished_fiber_with_exception_is_detached(),
                 "fib: fatal: an exception of type std::runtime_error escaped detached fiber 1 "
                 "\\(worker\\): boom");
}

}  // namespace
