// L07_ex1_errno_keeper_test.cpp — lesson 7, exercise 1: errno kept per fiber across every switch
// (lessons/07-fiber-local-storage/exercises/ex1_errno_keeper/errno_keeper.hpp).
#include <gtest/gtest.h>
#include <fcntl.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <vector>

#include "errno_keeper.hpp"
#include "fib/condvar.hpp"
#include "fib/fiber.hpp"

namespace {

using fib::this_fiber::yield;

// Makes a call fail in one of three ways; returns the errno it should leave.
int fail_somehow(int which) {
    switch (which) {
    case 0:
        close(-1);
        return EBADF;
    case 1:
        open("/nonexistent/l07-ex1", O_RDONLY);
        return ENOENT;
    default:
        std::strtol("99999999999999999999999", nullptr, 10);
        return ERANGE;
    }
}

TEST(L07_Ex1ErrnoKeeper, EachFiberReadsItsOwnErrnoAfterTheOthersSetTheirs) {
    fib::FiberManager manager;
    ErrnoKeeper keeper(manager);
    std::array<int, 3> expected{}, seen{};
    std::vector<fib::Fiber> fibers;
    for (int i = 0; i < 3; ++i)
        fibers.emplace_back([&, i] {
            expected[i] = fail_somehow(i);
            yield();  // the others fail in their ways meanwhile
            yield();
            seen[i] = errno;
        });
    for (fib::Fiber& fiber : fibers) fiber.join();
    EXPECT_EQ(expected, (std::array<int, 3>{EBADF, ENOENT, ERANGE}));
    EXPECT_EQ(seen, expected);
}

TEST(L07_Ex1ErrnoKeeper, ErrnoSurvivesAParkOnACondVarWhileAnotherFiberSetsItsOwn) {
    fib::FiberManager manager;
    ErrnoKeeper keeper(manager);
    fib::CondVar ready;
    bool notified = false;
    int parked_saw = 0, notifier_saw = 0;
    fib::Fiber parked([&] {
        close(-1);  // EBADF
        ready.wait([&] { return notified; });
        parked_saw = errno;
    });
    fib::Fiber notifier([&] {
        errno = EPIPE;
        notified = true;
        ready.notify_one();
        yield();  // the parked fiber runs and reads its errno
        notifier_saw = errno;
    });
    parked.join();
    notifier.join();
    EXPECT_EQ(parked_saw, EBADF);
    EXPECT_EQ(notifier_saw, EPIPE);
}

TEST(L07_Ex1ErrnoKeeper, MainKeepsItsErrnoWhileFibersSetTheirs) {
    fib::FiberManager manager;
    ErrnoKeeper keeper(manager);
    errno = EINTR;
    fib::Fiber a([] { errno = EBADF; yield(); errno = ENOENT; });
    fib::Fiber b([] { errno = ERANGE; yield(); errno = EPIPE; });
    yield();  // main runs between the fibers' steps too
    const int after_yield = errno;
    a.join();
    b.join();
    const int after_join = errno;
    EXPECT_EQ(after_yield, EINTR);
    EXPECT_EQ(after_join, EINTR);
}

TEST(L07_Ex1ErrnoKeeper, AFiberStartsWithErrnoZero) {
    fib::FiberManager manager;
    ErrnoKeeper keeper(manager);
    int at_start = -1;
    errno = EINTR;  // main's, which the fiber must not inherit
    fib::Fiber fiber([&] { at_start = errno; });
    fiber.join();
    EXPECT_EQ(at_start, 0);
}

// The keeper keeps errno alone: a thread_local is still one per thread, shared
// by its fibers (part two of the lesson gives each fiber its own). This one
// passes as shipped; it says what the exercise does not do.
thread_local int shared_counter = 0;

TEST(L07_Ex1ErrnoKeeper, AThreadLocalIsStillSharedByTheFibers) {
    fib::FiberManager manager;
    ErrnoKeeper keeper(manager);
    shared_counter = 0;
    std::array<int, 2> seen{};
    std::vector<fib::Fiber> fibers;
    for (int i = 0; i < 2; ++i)
        fibers.emplace_back([&, i] {
            ++shared_counter;
            yield();
            seen[i] = shared_counter;
        });
    for (fib::Fiber& fiber : fibers) fiber.join();
    EXPECT_EQ(seen, (std::array<int, 2>{2, 2}));
}

}  // namespace
