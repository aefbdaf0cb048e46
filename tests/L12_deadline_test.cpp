// L12_deadline_test.cpp — lesson 12: deadlines that nest. A scope's deadline cancels what runs
// inside it; nested, the inner one fires first when it is sooner, and cannot keep its children
// past the outer one when it is later; a shielded clean-up runs in a cancelled fiber, and its
// own deadline bounds it. Every wait here is an hour long: only a deadline or a cancel ends it
// (the watchdog would name a test that hung), and nothing asserts how long anything took.
#include <gtest/gtest.h>
#include <sys/socket.h>

#include <cerrno>
#include <chrono>
#include <optional>
#include <string>

#include "L04_waiter_harness.hpp"
#include "fib/io.hpp"
#include "fib/scope.hpp"
#include "fib/waiter.hpp"

namespace {

using namespace std::chrono_literals;

TEST(L12_Deadline, WithTimeoutCancelsTheFunctionWhenItsDeadlinePasses) {
    fib::FiberManager manager;
    fib::Waiter waiter;
    std::optional<bool> slept;
    EXPECT_FALSE(fib::with_timeout(10ms, [&] { slept = fib::sleep_for(1h); }));
    EXPECT_EQ(slept, std::optional<bool>(false));
    EXPECT_TRUE(fib::with_timeout(1h, [] {}));
    EXPECT_EQ(waiter.timers().size(), 0u);
}

// Outer: an hour. Inner: 10 ms. The inner one fires; the outer scope's body goes on after it.
TEST(L12_Deadline, NestedTheSoonerInnerDeadlineFires) {
    fib::FiberManager manager;
    fib::Waiter waiter;
    bool inner_passed = false, outer_passed = true, after_inner = false;
    fib::scope({.name = "outer", .timeout = 1h}, [&](fib::Scope& outer) {
        fib::scope({.name = "inner", .timeout = 10ms}, [&](fib::Scope& inner) {
            inner.spawn([] { fib::sleep_for(1h); });
            fib::sleep_for(1h);
            inner_passed = inner.deadline_passed();
        });
        after_inner = true;
        outer_passed = outer.deadline_passed();
    });
    EXPECT_TRUE(inner_passed);
    EXPECT_TRUE(after_inner);
    EXPECT_FALSE(outer_passed);
    EXPECT_EQ(waiter.timers().size(), 0u);
}

// Outer: 10 ms. Inner: an hour. The outer deadline cancels the body waiting in the inner scope,
// which passes the cancel on: the inner children end, though their own deadline is far off.
TEST(L12_Deadline, NestedALaterInnerDeadlineCannotExtendTheOuterOne) {
    fib::FiberManager manager;
    fib::Waiter waiter;
    std::optional<bool> inner_child_slept;
    bool inner_deadline_passed = true, inner_cancelled = false, outer_deadline_passed = false;
    fib::Fiber observer([&] {
        fib::scope({.name = "outer", .timeout = 10ms}, [&](fib::Scope&) {
            fib::scope({.name = "inner", .timeout = 1h}, [&](fib::Scope& inner) {
                inner.spawn([&] { inner_child_slept = fib::sleep_for(1h); });
                fib::sleep_for(1h);
                inner_deadline_passed = inner.deadline_passed();
                inner_cancelled = inner.cancelled();
            });
        });
    });
    // The outer scope's own view, from a scope that records it as its body ends.
    fib::scope({.name = "outer again", .timeout = 10ms}, [&](fib::Scope& outer) {
        EXPECT_FALSE(fib::with_timeout(1h, [] { fib::sleep_for(1h); }));
        outer_deadline_passed = outer.deadline_passed();
    });
    observer.join();
    EXPECT_EQ(inner_child_slept, std::optional<bool>(false));
    EXPECT_FALSE(inner_deadline_passed);
    EXPECT_TRUE(inner_cancelled);
    EXPECT_TRUE(outer_deadline_passed);
    EXPECT_EQ(waiter.timers().size(), 0u);
}

// A client fiber is cancelled in its read. Its polite close says goodbye and waits for the peer
// to close too: a wait, which in a cancelled fiber ends at once (ECANCELED) unless shielded.
TEST(L12_Deadline, AShieldedCleanUpWaitsInACancelledFiber) {
    fib::FiberManager manager;
    fib::Waiter waiter;
    l04_waiter::Pair socket = l04_waiter::make_fds(true);
    ssize_t unshielded = 0, peer_closed = -1;
    int unshielded_errno = 0;
    bool in_time = false;
    const auto polite_close = [&] {
        fib::io::write_all(socket.first.get(), "bye\r\n", 5);
        char byte;
        return fib::io::read(socket.first.get(), &byte, 1);  // 0: the peer closed
    };
    fib::Fiber client([&] {
        char byte;
        fib::io::read(socket.first.get(), &byte, 1);  // cancelled here
        unshielded = polite_close();
        unshielded_errno = errno;
        in_time = fib::shielded(1h, [&] { peer_closed = polite_close(); });
    });
    std::string got;
    fib::Fiber peer([&] {
        char buffer[16];
        ssize_t n;
        while (got.size() < 10 && (n = fib::io::read(socket.second.get(), buffer, sizeof buffer)) > 0)
            got.append(buffer, static_cast<std::size_t>(n));
        socket.second.reset();
    });
    for (int i = 0; i < 10 && waiter.stats().waiting < 2; ++i) fib::this_fiber::yield();
    client.cancel();
    client.join();
    peer.join();
    EXPECT_EQ(unshielded, -1);
    EXPECT_EQ(unshielded_errno, ECANCELED);
    EXPECT_EQ(peer_closed, 0);
    EXPECT_TRUE(in_time);
    EXPECT_EQ(got, "bye\r\nbye\r\n");
}

// The clean-up waits on a peer that never reads: its own deadline ends it, in a fiber that was
// cancelled before it began (the shield keeps that cancel, the deadline does not).
TEST(L12_Deadline, AShieldedCleanUpIsItselfBounded) {
    fib::FiberManager manager;
    fib::Waiter waiter;
    std::optional<bool> slept;
    std::optional<bool> in_time;
    fib::Fiber client([&] {
        fib::this_fiber::yield();
        in_time = fib::shielded(10ms, [&] { slept = fib::sleep_for(1h); });
    });
    client.cancel();
    client.join();
    EXPECT_EQ(in_time, std::optional<bool>(false));
    EXPECT_EQ(slept, std::optional<bool>(false));
}

}  // namespace
