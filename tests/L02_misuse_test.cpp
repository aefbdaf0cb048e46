// L02_misuse_test.cpp — lesson 2: every misuse of Fiber and FiberManager stops the program with
// a "fib: fatal:" message that names it: bad joins, a joinable handle destroyed, no manager or
// two, a deadlock, and a fiber's stack overflow caught by the OverflowGuard.
#include <gtest/gtest.h>
#include <pthread.h>

#include <cstdint>
#include <memory>

#include "L01_sanitizers.hpp"
#include "L02_big_frame.hpp"
#include "fib/fiber.hpp"

namespace {

void fiber_joins_itself() {
    fib::FiberManager manager;
    fib::Fiber self_joiner;
    self_joiner = fib::Fiber({.name = "narcissus"}, [&self_joiner] { self_joiner.join(); });
    fib::this_fiber::yield();
}

void join_twice() {
    fib::FiberManager manager;
    fib::Fiber worker([] {});
    worker.join();
    worker.join();
}

void join_a_detached_fiber() {
    fib::FiberManager manager;
    fib::Fiber worker([] {});
    worker.detach();
    worker.join();
}

void destroy_a_joinable_handle() {
    fib::FiberManager manager;
    fib::Fiber worker({.name = "forgotten"}, [] {});
}

void assign_over_a_joinable_handle() {
    fib::FiberManager manager;
    fib::Fiber worker({.name = "overwritten"}, [] {});
    worker = fib::Fiber([] {});
}

void destroy_the_manager_before_a_joinable_handle() {
    auto manager = std::make_unique<fib::FiberManager>();
    fib::Fiber worker({.name = "outlived"}, [] {});
    manager.reset();
}

void wait_for_all_from_a_fiber() {
    fib::FiberManager manager;
    fib::Fiber waiter({.name = "impatient"}, [&manager] { manager.wait_for_all(); });
    waiter.join();
}

void second_manager_on_one_thread() {
    fib::FiberManager first;
    fib::FiberManager second;
}

// Main waits for all; each of the two fibers joins the other. Nobody can run.
void two_fibers_join_each_other() {
    fib::FiberManager manager;
    fib::Fiber first;
    fib::Fiber second;
    first = fib::Fiber({.name = "first"}, [&second] { second.join(); });
    second = fib::Fiber({.name = "second"}, [&first] { first.join(); });
    manager.wait_for_all();
}

// Recursion that only a stack of about 256 MiB could finish. The volatile frame makes every
// call take real stack, and passing its address to the callee keeps the frame alive across the
// call, so the compiler can turn neither into a loop nor a tail call.
__attribute__((noinline)) int recurse(int depth, int limit, volatile char* caller_frame) {
    volatile char frame[256];
    frame[0] = static_cast<char>(caller_frame[0] + 1);
    if (depth >= limit) return frame[0];
    return recurse(depth + 1, limit, frame) + frame[0];
}

void overflow_a_fiber_stack() {
    fib::FiberManager manager;
    fib::Fiber deep({.name = "deep"}, [] {
        volatile char seed = 0;
        recurse(0, 1'000'000, &seed);
    });
    deep.join();
}

// Goes down the stack in small frames until less than 2 KiB is left, then calls a function
// whose 16 KiB frame, built without stack-clash protection, writes 14 KiB below the stack: past
// a one-page guard, into whatever lies below (a neighbouring fiber's stack and record).
__attribute__((noinline)) int descend_then_jump(const char* bottom, volatile char* caller_frame) {
    volatile char frame[128];
    frame[0] = static_cast<char>(caller_frame[0] + 1);
    if (reinterpret_cast<std::uintptr_t>(&frame[0]) - reinterpret_cast<std::uintptr_t>(bottom) > 2048)
        return descend_then_jump(bottom, frame) + frame[0];
    touch_a_big_frame(frame);
    return frame[0];
}

void jump_over_the_guard() {
    fib::FiberManager manager;
    fib::Fiber neighbour({.name = "neighbour"}, [] { fib::this_fiber::yield(); });
    fib::Fiber jumper({.name = "jumper"}, [&manager] {
        volatile char seed = 0;
        descend_then_jump(static_cast<const char*>(manager.running()->stack.bottom()), &seed);
    });
    jumper.join();
    neighbour.join();
}

// Writes one byte below the fiber's lowest usable byte: straight into its guard page.
void write_into_the_guard_page() {
    fib::FiberManager manager;
    fib::Fiber scribbler({.name = "scribbler", .stack_size = 128 * 1024}, [&manager] {
        auto* bottom = static_cast<volatile char*>(manager.running()->stack.bottom());
        bottom[-1] = 1;
    });
    scribbler.join();
}

TEST(L02_MisuseDeathTest, FiberJoiningItselfStops) {
    EXPECT_DEATH(fiber_joins_itself(),
                 "fib: fatal: fiber 1 \\(narcissus\\) joined itself; a fiber cannot wait");
}

TEST(L02_MisuseDeathTest, JoiningTwiceStops) {
    EXPECT_DEATH(join_twice(), "fib: fatal: join\\(\\) on fiber 1, which was already joined");
}

TEST(L02_MisuseDeathTest, JoiningADetachedFiberStops) {
    EXPECT_DEATH(join_a_detached_fiber(), "fib: fatal: join\\(\\) on fiber 1, which was detached");
}

TEST(L02_MisuseDeathTest, JoiningAnEmptyHandleStops) {
    fib::Fiber empty;
    EXPECT_DEATH(empty.join(), "fib: fatal: join\\(\\) on an empty Fiber handle");
}

TEST(L02_MisuseDeathTest, DestroyingAJoinableHandleStops) {
    EXPECT_DEATH(destroy_a_joinable_handle(),
                 "fib: fatal: the Fiber handle of fiber 1 \\(forgotten\\) was destroyed while "
                 "joinable");
}

TEST(L02_MisuseDeathTest, AssigningOverAJoinableHandleStops) {
    EXPECT_DEATH(assign_over_a_joinable_handle(),
                 "fib: fatal: a Fiber was assigned over the joinable handle of fiber 1 "
                 "\\(overwritten\\)");
}

TEST(L02_MisuseDeathTest, DestroyingTheManagerWhileAHandleIsJoinableStops) {
    EXPECT_DEATH(destroy_the_manager_before_a_joinable_handle(),
                 "fib: fatal: the FiberManager was destroyed while fiber 1 \\(outlived\\) still "
                 "has a joinable Fiber handle");
}

TEST(L02_MisuseDeathTest, WaitForAllFromAFiberStops) {
    EXPECT_DEATH(wait_for_all_from_a_fiber(),
                 "fib: fatal: wait_for_all\\(\\) was called from fiber 1 \\(impatient\\)");
}

TEST(L02_MisuseDeathTest, YieldOnAThreadWithNoManagerStops) {
    EXPECT_DEATH(fib::this_fiber::yield(),
                 "fib: fatal: this_fiber::yield\\(\\) was called on a thread with no "
                 "FiberManager");
}

TEST(L02_MisuseDeathTest, CreatingAFiberWithNoManagerStops) {
    EXPECT_DEATH(fib::Fiber([] {}).detach(),
                 "fib: fatal: a Fiber was created on a thread with no FiberManager");
}

TEST(L02_MisuseDeathTest, SecondManagerOnOneThreadStops) {
    EXPECT_DEATH(second_manager_on_one_thread(),
                 "fib: fatal: a second FiberManager was created on a thread that already has one");
}

// The report lists every blocked fiber with what it waits for, then the fatal line.
TEST(L02_MisuseDeathTest, DeadlockReportsEveryBlockedFiber) {
    EXPECT_DEATH(two_fibers_join_each_other(),
                 "fib: deadlock: no fiber is ready to run, and these are blocked:\n"
                 "  fiber 0 \\(main\\): in wait_for_all\n"
                 "  fiber 1 \\(first\\): in join, waiting for fiber 2 \\(second\\)\n"
                 "  fiber 2 \\(second\\): in join, waiting for fiber 1 \\(first\\)\n"
                 "  cycle: fiber 1 \\(first\\) waits for fiber 2 \\(second\\), "
                 "fiber 2 \\(second\\) waits for fiber 1 \\(first\\)\n"
                 "fib: fatal: deadlock: every fiber is blocked");
}

// Three fibers join round a ring; a fourth parks on a wait site that names one of them, and
// main joins the fourth. The cycle is printed once, from its lowest id, and the fibers that
// only wait for it (main, d) are not in it.
void three_fibers_join_round_a_ring() {
    fib::FiberManager manager;
    fib::Fiber a, b, c;
    fib::FiberRecord* record_of_a = nullptr;
    a = fib::Fiber({.name = "a"}, [&] {
        record_of_a = manager.running();
        b.join();
    });
    b = fib::Fiber({.name = "b"}, [&c] { c.join(); });
    c = fib::Fiber({.name = "c"}, [&a] { a.join(); });
    fib::Fiber d({.name = "d"}, [&] {
        while (!record_of_a) fib::this_fiber::yield();
        manager.park(manager.begin_wait(), fib::WaitSite{"a hand-over", record_of_a, nullptr});
    });
    d.join();
}

TEST(L02_MisuseDeathTest, DeadlockReportPrintsTheCycleOfJoinsOnce) {
    EXPECT_DEATH(three_fibers_join_round_a_ring(),
                 "  fiber 4 \\(d\\): in a hand-over, waiting for fiber 1 \\(a\\)\n"
                 "  cycle: fiber 1 \\(a\\) waits for fiber 2 \\(b\\), fiber 2 \\(b\\) waits for "
                 "fiber 3 \\(c\\), fiber 3 \\(c\\) waits for fiber 1 \\(a\\)\n"
                 "fib: fatal: deadlock");
}

// A fiber parked by code of its own, naming what it waits on: the report shows the
// site's text and the object's address.
void park_on_a_mailbox() {
    fib::FiberManager manager;
    static int mailbox = 0;
    fib::Fiber reader({.name = "reader"}, [&manager] {
        manager.park(manager.begin_wait(), fib::WaitSite{"the mailbox", nullptr, &mailbox});
    });
    reader.join();
}

TEST(L02_MisuseDeathTest, DeadlockReportNamesTheObjectAParkedFiberWaitsOn) {
    EXPECT_DEATH(park_on_a_mailbox(),
                 "  fiber 0 \\(main\\): in join, waiting for fiber 1 \\(reader\\)\n"
                 "  fiber 1 \\(reader\\): in the mailbox, on 0x[0-9a-f]+\n");
}

// pthread_exit and pthread_cancel end a thread by unwinding it: on a fiber they would end the
// thread under every other fiber. Each stops the program naming the fiber.
void fiber_calls_pthread_exit() {
    fib::FiberManager manager;
    fib::Fiber quitter({.name = "quitter"}, [] { ::pthread_exit(nullptr); });
    quitter.join();
}

void fiber_is_cancelled() {
    fib::FiberManager manager;
    fib::Fiber victim({.name = "victim"}, [] {
        ::pthread_cancel(::pthread_self());
        ::pthread_testcancel();
    });
    victim.join();
}

TEST(L02_MisuseDeathTest, PthreadExitOnAFiberStopsNamingTheFiber) {
    SKIP_UNDER_THREAD_SANITIZER("TSan's pthread_exit checks that it runs on the thread's own "
                                "TSan state, not a fiber's, and stops first");
    EXPECT_DEATH(fiber_calls_pthread_exit(),
                 "fib: fatal: fiber 1 \\(quitter\\) was unwound by pthread_exit\\(\\) or "
                 "pthread_cancel\\(\\)");
}

TEST(L02_MisuseDeathTest, PthreadCancelOnAFiberStopsNamingTheFiber) {
    EXPECT_DEATH(fiber_is_cancelled(),
                 "fib: fatal: fiber 1 \\(victim\\) was unwound by pthread_exit\\(\\) or "
                 "pthread_cancel\\(\\)");
}

TEST(L02_MisuseDeathTest, UnboundedRecursionReportsStackOverflowWithTheStackSize) {
    EXPECT_DEATH(overflow_a_fiber_stack(),
                 "fib: fatal: stack overflow in fiber 1 \\(deep\\): its stack is 65536 bytes; "
                 "the access at 0x[0-9a-f]+ hit the guard below it");
}

TEST(L02_MisuseDeathTest, AFrameBiggerThanAPageBuiltWithoutClashProtectionCannotJumpTheGuard) {
    EXPECT_DEATH(jump_over_the_guard(),
                 "fib: fatal: stack overflow in fiber 2 \\(jumper\\): its stack is 65536 bytes");
}

TEST(L02_MisuseDeathTest, WriteIntoTheGuardPageReportsStackOverflow) {
    EXPECT_DEATH(write_into_the_guard_page(),
                 "fib: fatal: stack overflow in fiber 1 \\(scribbler\\): its stack is 131072 "
                 "bytes; the access at 0x[0-9a-f]+ hit the guard below it");
}

}  // namespace
