// L07_gs_base_test.cpp — lesson 7: the kernel keeps a thread's user %gs base, which is what lets
// fiber_local load it only in the switch. A signal handler run on a fiber sees that fiber's block
// and leaves it in place; a thread that sleeps while another thread with a different %gs base
// runs on the same CPU gets its own base back. The base is read with arch_prctl(ARCH_GET_GS), so
// the tests mean the same with FSGSBASE and under FIB_TLS_SWITCH=arch_prctl.
// x86-64 only: AArch64 has no %gs (L07_thread_pointer_test.cpp tests its tpidr_el0).
#if defined(__x86_64__)

#include <gtest/gtest.h>

#include <asm/prctl.h>
#include <sched.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <thread>

#include "fib/fiber.hpp"
#include "fib/fiber_local.hpp"
#include "fib/fiber_tls.hpp"

namespace {

fib::fiber_local<int> mark{0};

std::uint64_t gs_base() {
    std::uint64_t base = 0;
    syscall(SYS_arch_prctl, ARCH_GET_GS, &base);
    return base;
}

// What the SIGUSR1 handler saw: plain globals, written by the handler on this thread only.
volatile std::uint64_t base_in_handler = 0;
volatile int mark_in_handler = 0;

void look_at_gs(int) {
    base_in_handler = gs_base();
    mark_in_handler = *mark;
}

struct Seen {
    std::uint64_t before = 0, in_handler = 0, after = 0;
    int mark_in_handler = 0, mark_after = 0;
};

// Two fibers, each with its own mark, raise SIGUSR1 in turn, yielding in between.
TEST(L07_GsBase, ASignalHandlerOnAFiberSeesThatFibersBlockAndLeavesItInPlace) {
    struct sigaction action {}, previous{};
    action.sa_handler = look_at_gs;
    ASSERT_EQ(sigaction(SIGUSR1, &action, &previous), 0);
    fib::FiberManager manager;
    fib::FiberTls tls(manager);
    Seen seen[2];
    auto body = [&seen](int index) {
        *mark = 100 + index;
        fib::this_fiber::yield();  // the other fiber sets its mark in between
        seen[index].before = gs_base();
        raise(SIGUSR1);  // the handler runs before raise() returns, on this fiber's stack
        seen[index].in_handler = base_in_handler;
        seen[index].mark_in_handler = mark_in_handler;
        fib::this_fiber::yield();
        seen[index].after = gs_base();
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

// This thread and a helper with another %gs base share one CPU; this thread sleeps 200 times
// inside a fiber, so the helper runs in between, and each wake-up finds the fiber's base again.
TEST(L07_GsBase, ContextSwitchesWithAnotherThreadOnTheSameCpuKeepTheFibersBase) {
    cpu_set_t allowed;
    ASSERT_EQ(sched_getaffinity(0, sizeof allowed, &allowed), 0);
    int target = -1;
    for (int cpu = 0; cpu < CPU_SETSIZE && target < 0; ++cpu)
        if (CPU_ISSET(cpu, &allowed)) target = cpu;
    cpu_set_t only;
    CPU_ZERO(&only);
    CPU_SET(target, &only);
    if (sched_setaffinity(0, sizeof only, &only) != 0) GTEST_SKIP() << "cannot pin: " << std::strerror(errno);

    static char helpers_block[64];  // never dereferenced: only a distinct base
    const auto helpers_base = reinterpret_cast<std::uint64_t>(helpers_block);
    std::atomic<bool> stop{false};
    std::atomic<long> helper_turns{0};
    std::atomic<bool> helper_kept_its_base{true};
    std::thread helper([&] {  // inherits the pinning
        syscall(SYS_arch_prctl, ARCH_SET_GS, helpers_base);
        while (!stop.load()) {
            if (gs_base() != helpers_base) helper_kept_its_base = false;
            helper_turns.fetch_add(1);
            sched_yield();
        }
    });

    fib::FiberManager manager;
    fib::FiberTls tls(manager);
    std::uint64_t base = 0;
    int wakeups_with_its_base = 0, marks_intact = 0;
    fib::Fiber fiber([&] {
        *mark = 42;
        base = gs_base();
        for (int i = 0; i < 200; ++i) {
            usleep(100);
            wakeups_with_its_base += gs_base() == base;
            marks_intact += *mark == 42;
        }
    });
    fiber.join();
    stop = true;
    helper.join();
    sched_setaffinity(0, sizeof allowed, &allowed);
    EXPECT_NE(base, helpers_base);
    EXPECT_EQ(wakeups_with_its_base, 200);
    EXPECT_EQ(marks_intact, 200);
    EXPECT_GT(helper_turns.load(), 0) << "the helper never ran on the shared CPU";
    EXPECT_TRUE(helper_kept_its_base.load());
}

}  // namespace

#endif
