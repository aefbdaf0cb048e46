// L07_rollback_test.cpp — lesson 7: what fails halfway leaves nothing behind. A fiber_local whose
// copy constructor throws while a FiberTls is made: the exception reaches the caller, no copy
// stays alive, and the manager keeps no environment (later fibers run); the same as a fiber
// starts: its exception, seen by join(). An environment whose fiber_created throws: the spawn
// throws, no record stays in the manager, and later fibers run.
#include <gtest/gtest.h>

#include <new>
#include <stdexcept>

#include "fib/fiber.hpp"
#include "fib/fiber_local.hpp"
#include "fib/fiber_tls.hpp"

namespace {

int live_counted = 0;
bool copies_throw = false;

struct Counted {
    Counted() { ++live_counted; }
    Counted(const Counted&) { ++live_counted; }
    ~Counted() { --live_counted; }
};

struct ThrowsOnCopy {
    ThrowsOnCopy() = default;
    ThrowsOnCopy(const ThrowsOnCopy&) {
        if (copies_throw) throw std::runtime_error("copy refused");
    }
};

// Constructed in declaration order: the Counted copy exists when the other one throws.
fib::fiber_local<Counted> counted{Counted{}};
fib::fiber_local<ThrowsOnCopy> throws_on_copy{ThrowsOnCopy{}};

TEST(L07_Rollback, AFiberLocalCopyThrowingWhileFiberTlsIsMadeLeavesNoEnvironmentAndNoCopy) {
    fib::FiberManager manager;
    const int live_before = live_counted;
    copies_throw = true;
    EXPECT_THROW(fib::FiberTls tls(manager), std::runtime_error);
    copies_throw = false;
    EXPECT_EQ(live_counted, live_before);
    bool ran = false;
    fib::Fiber plain([&ran] { ran = true; });  // no environment: lesson 2's switch
    plain.join();
    EXPECT_TRUE(ran);
    fib::FiberTls tls(manager);  // and one can be installed afterwards
    fib::Fiber with_tls([&ran] { ran = (*counted, true); });
    with_tls.join();
}

// The copy made as a fiber starts throws: that is the fiber's exception, seen by join().
TEST(L07_Rollback, AFiberLocalCopyThrowingAsAFiberStartsIsThatFibersException) {
    fib::FiberManager manager;
    fib::FiberTls tls(manager);
    const int live_before = live_counted;
    copies_throw = true;
    fib::Fiber refused([] { ADD_FAILURE() << "the body ran"; });
    EXPECT_THROW(refused.join(), std::runtime_error);
    copies_throw = false;
    EXPECT_EQ(live_counted, live_before);
    bool ran = false;
    fib::Fiber next([&ran] { ran = true; });
    next.join();
    EXPECT_TRUE(ran);
}

struct FailingEnvironment final : fib::FiberEnvironment {
    int created = 0;
    void fiber_created(fib::FiberRecord&) override {
        if (++created == 2) throw std::bad_alloc();
    }
    void fiber_starting(fib::FiberRecord&) override {}
    void fiber_ending(fib::FiberRecord&) override {}
    void fiber_released(fib::FiberRecord&) override {}
};

TEST(L07_Rollback, AnEnvironmentThrowingInFiberCreatedLeavesNoRecordAndLaterFibersRun) {
    fib::FiberManager manager;
    FailingEnvironment environment;
    manager.set_environment(&environment, &fib::switch_context);
    const auto records_before = manager.stats().records;
    int ran = 0;
    fib::Fiber first([&ran] { ++ran; });
    EXPECT_THROW(fib::Fiber second([&ran] { ++ran; }), std::bad_alloc);
    EXPECT_EQ(manager.stats().records, records_before + 1);
    fib::Fiber third([&ran] { ++ran; });
    first.join();
    third.join();
    EXPECT_EQ(ran, 2);
    EXPECT_EQ(manager.stats().records, records_before);
    manager.set_environment(nullptr, &fib::switch_context);
}

}  // namespace
