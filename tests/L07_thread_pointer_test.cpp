// L07_thread_pointer_test.cpp — lesson 7, AArch64: the thread pointer a fiber runs with. A signal
// handler run on a fiber sees that fiber's tpidr_el0 and fiber_local block and leaves both in place
// (the kernel keeps tpidr_el0 across a signal as the code left it); and tpidrro_el0, the one other
// thread register user code can read, cannot be written from user code: the reason fiber_local
// keeps its block in a thread_local there (fiber_local.hpp). x86-64 has L07_gs_base_test.cpp.
#if defined(__aarch64__)

#include <gtest/gtest.h>

#include <signal.h>

#include <cstdint>

#include "fib/fiber.hpp"
#include "fib/fiber_local.hpp"
#include "fib/fiber_tls.hpp"

namespace {

fib::fiber_local<int> mark{0};

std::uint64_t tpidr_el0() {
    std::uint64_t tp;
    asm volatile("mrs %0, tpidr_el0" : "=r"(tp));
    return tp;
}

// What the SIGUSR1 handler saw: plain globals, written by the handler on this thread only.
volatile std::uint64_t tp_in_handler = 0;
volatile int mark_in_handler = 0;

void look_at_tp(int) {
    tp_in_handler = tpidr_el0();
    mark_in_handler = *mark;
}

struct Seen {
    std::uint64_t before = 0, in_handler = 0, after = 0;
    int mark_in_handler = 0, mark_after = 0;
};

// Two fibers, each with its own TLS block and mark, raise SIGUSR1 in turn, yielding in between.
TEST(L07_ThreadPointer, ASignalHandlerOnAFiberSeesThatFibersBlockAndLeavesItInPlace) {
    struct sigaction action {}, previous{};
    action.sa_handler = look_at_tp;
    ASSERT_EQ(sigaction(SIGUSR1, &action, &previous), 0);
    fib::FiberManager manager;
    fib::FiberTls tls(manager);
    Seen seen[2];
    auto body = [&seen](int index) {
        *mark = 100 + index;
        fib::this_fiber::yield();  // the other fiber sets its mark in between
        seen[index].before = tpidr_el0();
        raise(SIGUSR1);  // the handler runs before raise() returns, on this fiber's stack
        seen[index].in_handler = tp_in_handler;
        seen[index].mark_in_handler = mark_in_handler;
        fib::this_fiber::yield();
        seen[index].after = tpidr_el0();
        seen[index].mark_after = *mark;
    };
    fib::Fiber first([&] { body(0); });
    fib::Fiber second([&] { body(1); });
    first.join();
    second.join();
    sigaction(SIGUSR1, &previous, nullptr);
    EXPECT_NE(seen[0].before, seen[1].before) << "each fiber has a block of its own";
    for (int index = 0; index < 2; ++index) {
        EXPECT_NE(seen[index].before, 0u);
        EXPECT_EQ(seen[index].in_handler, seen[index].before) << "fiber " << index;
        EXPECT_EQ(seen[index].after, seen[index].before) << "fiber " << index;
        EXPECT_EQ(seen[index].mark_in_handler, 100 + index);
        EXPECT_EQ(seen[index].mark_after, 100 + index);
    }
}

// With fiber_locals alone the fibers share the thread's TLS block, and the switch stores each
// one's block in the thread's fiber_local_block: still one copy per fiber.
TEST(L07_ThreadPointer, WithFiberLocalsAloneTheSwitchStoresEachFibersBlock) {
    fib::FiberManager manager;
    fib::FiberTls tls(manager, {.thread_locals = false, .fiber_locals = true});
    const std::uint64_t main_tp = tpidr_el0();
    int marks[2] = {};
    std::uint64_t tps[2] = {};
    auto body = [&](int index) {
        *mark = 200 + index;
        fib::this_fiber::yield();
        marks[index] = *mark;
        tps[index] = tpidr_el0();
    };
    fib::Fiber first([&] { body(0); });
    fib::Fiber second([&] { body(1); });
    first.join();
    second.join();
    EXPECT_EQ(marks[0], 200);
    EXPECT_EQ(marks[1], 201);
    EXPECT_EQ(tps[0], main_tp);
    EXPECT_EQ(tps[1], main_tp);
}

// tpidrro_el0 is the thread register x86-64's %gs would map to, but user code may only read it.
TEST(L07_ThreadPointerDeathTest, WritingTpidrroEl0FromUserCodeIsSigill) {
    EXPECT_EXIT(
        {
            std::uint64_t value = 0x1234;
            asm volatile("msr tpidrro_el0, %0" : : "r"(value));
        },
        testing::KilledBySignal(SIGILL), "");
}

}  // namespace

#endif
