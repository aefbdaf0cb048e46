// L07_memory_test.cpp — lesson 7: what per-fiber TLS costs over time, and what it must not break.
// TLS and fiber_local blocks are pooled and handed to the next fiber, so a program that starts
// fibers one after another makes one block, not one per fiber, and its resident memory stays flat
// over 100,000 fibers that malloc, touch thread_locals and yield. And the scheduler's own
// bookkeeping (the current manager, the Waiter, timers, io) works from fibers whose TLS is their
// own: it must not be per fiber.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <malloc.h>
#include <unistd.h>

#include <chrono>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "L02_schedule.hpp"
#include "fib/fiber.hpp"
#include "fib/fiber_tls.hpp"
#include "fib/io.hpp"
#include "fib/timer.hpp"
#include "fib/waiter.hpp"

#if defined(__SANITIZE_ADDRESS__)
// libasan: drain the quarantine and give free pages back to the kernel. Without it every free()
// of the run stays resident in the quarantine (up to 256 MiB), and RSS measures ASan, not us.
extern "C" void __sanitizer_purge_allocator();
extern "C" std::size_t __sanitizer_get_current_allocated_bytes();
#endif

namespace {

// The process's resident memory, from /proc/self/statm (as tests/bench's resident_bytes()).
long resident_bytes() {
#if defined(__SANITIZE_ADDRESS__)
    __sanitizer_purge_allocator();
#endif
    std::ifstream statm("/proc/self/statm");
    long size = 0, resident = 0;
    statm >> size >> resident;
    return resident * sysconf(_SC_PAGESIZE);
}

// Bytes malloc'd and not yet freed: a leak of a few bytes a fiber, too small for RSS to show.
long live_heap_bytes() {
#if defined(__SANITIZE_ADDRESS__)
    return static_cast<long>(__sanitizer_get_current_allocated_bytes());
#else
    const struct mallinfo2 info = mallinfo2();
    return static_cast<long>(info.uordblks + info.hblkhd);
#endif
}

// Touched by every fiber: a plain counter and one with a destructor and a heap buffer, which
// registers a TLS destructor on its block (run as the fiber ends, as at a thread's exit).
thread_local long tls_touches = 0;
thread_local std::string tls_buffer;

// One fiber of the runs below: malloc and free, touch both thread_locals, yield to main.
void busy_fiber_body() {
    void* memory = std::malloc(64);
    static_cast<volatile char*>(memory)[0] = 1;
    std::free(memory);
    ++tls_touches;
    tls_buffer.assign(100, 'x');
    fib::this_fiber::yield();
}

// Spawns `count` fibers one after another; main yields once to each (so its yield switches) and
// then joins it. Returns how many fibers saw a fresh thread_local (each must).
long run_one_after_another(long count) {
    long fresh = 0;
    for (long i = 0; i < count; ++i) {
        fib::Fiber fiber([&fresh] {
            if (tls_touches == 0 && tls_buffer.empty()) ++fresh;
            busy_fiber_body();
        });
        fib::this_fiber::yield();
        fiber.join();
    }
    return fresh;
}

// One fiber at a time: one TLS block in all, and two fiber_local blocks (main's, and the one the
// fibers take turns with). Stacks are pooled the same way.
TEST(L07_Memory, ThousandSequentialFibersReuseOneTlsBlockAndOneLocalBlock) {
    fib::FiberManager manager;
    fib::FiberTls tls(manager);
    EXPECT_EQ(run_one_after_another(1000), 1000);
    const fib::FiberTlsStats stats = tls.stats();
    EXPECT_EQ(stats.tls_blocks_created, 1u);
    EXPECT_EQ(stats.tls_blocks_pooled, 1u);
    EXPECT_EQ(stats.local_blocks_created, 2u) << "main's block and one fiber's";
    EXPECT_EQ(stats.local_blocks_pooled, 1u) << "main's is in use";
    EXPECT_EQ(manager.stats().stacks_created, 1u);
}

// 100 fibers alive at once take a block each as they are created (before they run). Joined,
// every block waits in the pool: pooled == created - in use (main keeps its local block). The
// next 100 take them back and make none.
TEST(L07_Memory, HundredLiveFibersMakeHundredBlocksThatAllReturnToThePool) {
    fib::FiberManager manager;
    fib::FiberTls tls(manager);
    for (int wave = 0; wave < 2; ++wave) {
        std::vector<fib::Fiber> fibers;
        for (int i = 0; i < 100; ++i) fibers.emplace_back(busy_fiber_body);
        fib::FiberTlsStats stats = tls.stats();
        EXPECT_EQ(stats.tls_blocks_created, 100u) << "wave " << wave;
        EXPECT_EQ(stats.tls_blocks_pooled, 0u);
        EXPECT_EQ(stats.local_blocks_created, 101u);
        EXPECT_EQ(stats.local_blocks_pooled, 0u);
        fib::this_fiber::yield();  // every fiber runs to its yield: still in use
        EXPECT_EQ(tls.stats().tls_blocks_pooled, 0u);
        for (fib::Fiber& fiber : fibers) fiber.join();
        stats = tls.stats();
        EXPECT_EQ(stats.tls_blocks_created, 100u);
        EXPECT_EQ(stats.tls_blocks_pooled, stats.tls_blocks_created) << "none in use";
        EXPECT_EQ(stats.local_blocks_created, 101u);
        EXPECT_EQ(stats.local_blocks_pooled, stats.local_blocks_created - 1);
    }
}

// Without recycling each fiber would keep a TLS block (~3.6 KiB with its DTV) and, dynamically
// linked, a fresh malloc cache (~1.3 KiB): about 130 MB for 100,000 fibers. Warm-up first, so
// the pools, the stack and malloc's arenas are at their steady size before the first reading.
// The run goes in ten rounds of 10,000, and stops at the first round past the bound: a leak
// fails in a second, not after every fiber. The live heap is held to a finer bound: 256 KiB is
// under 3 bytes a fiber, far below what RSS can show. Under ASan (make SAN=1 test) each fiber
// also maps and unmaps a fake stack and the run takes over a minute, so there the rounds are
// of 1,000: 10,000 fibers.
TEST(L07_Memory, RssAndLiveHeapStayFlatOverHundredThousandSequentialTlsFibers) {
    constexpr long kRssBound = 8L * 1024 * 1024;
    constexpr long kHeapBound = 256L * 1024;
#if defined(__SANITIZE_ADDRESS__)
    constexpr long kPerRound = 1'000;
#else
    constexpr long kPerRound = 10'000;
#endif
    fib::FiberManager manager;
    fib::FiberTls tls(manager);
    ASSERT_EQ(run_one_after_another(1000), 1000);
    const long before = resident_bytes();
    const long heap_before = live_heap_bytes();
    long fibers = 0, growth = 0, heap_growth = 0;
    for (int round = 0; round < 10; ++round) {
        ASSERT_EQ(run_one_after_another(kPerRound), kPerRound);
        fibers += kPerRound;
        heap_growth = live_heap_bytes() - heap_before;
        growth = resident_bytes() - before;
        if (growth >= kRssBound || heap_growth >= kHeapBound) break;
    }
    std::printf("RSS before %ld KiB, growth %ld KiB; live heap growth %ld bytes; over %ld fibers\n",
                before / 1024, growth / 1024, heap_growth, fibers);
    EXPECT_LT(growth, kRssBound) << "after " << fibers << " fibers";
    EXPECT_LT(heap_growth, kHeapBound) << "after " << fibers << " fibers";
    EXPECT_EQ(fibers, 10 * kPerRound);
    EXPECT_EQ(tls.stats().tls_blocks_created, 1u);
    EXPECT_EQ(tls.stats().local_blocks_created, 2u);
    EXPECT_EQ(tls_touches, 0) << "main's own thread_local was never touched";
}

// The scheduler keeps its state in the manager and the records, and only the manager pointer in
// TLS (set again as each fiber starts): from a fiber with TLS of its own, current() finds the
// one manager and its Waiter, yield switches, a nested fiber spawns and joins.
TEST(L07_Memory, SchedulerCallsWorkInsideATlsFiber) {
    EXPECTS_FIFO_ORDER();
    fib::FiberManager manager;
    fib::FiberTls tls(manager);
    fib::Waiter waiter;  // after the FiberTls: its fiber has blocks of its own too
    std::vector<std::string> log;
    fib::Fiber outer({.name = "outer"}, [&] {
        EXPECT_EQ(fib::FiberManager::current(), &manager);
        EXPECT_EQ(fib::Waiter::current(), &waiter);
        EXPECT_STREQ(fib::this_fiber::name(), "outer");
        log.push_back("outer starts");
        fib::Fiber inner({.name = "inner"}, [&] {
            EXPECT_EQ(fib::FiberManager::current(), &manager);
            EXPECT_EQ(fib::Waiter::current(), &waiter);
            log.push_back("inner runs");
            fib::this_fiber::yield();
            log.push_back("inner ends");
        });
        fib::this_fiber::yield();
        log.push_back("outer yielded");
        inner.join();
        log.push_back("outer joined inner");
    });
    fib::this_fiber::yield();
    log.push_back("main yielded");
    outer.join();
    EXPECT_EQ(log, (std::vector<std::string>{"outer starts", "main yielded", "inner runs",
                                             "outer yielded", "inner ends", "outer joined inner"}));
}

TEST(L07_Memory, SleepForReturnsInsideATlsFiber) {
    using namespace std::chrono_literals;
    fib::FiberManager manager;
    fib::FiberTls tls(manager);
    fib::Waiter waiter;
    bool woke = false;
    fib::Fiber sleeper([&] {
        const fib::Clock::time_point deadline = fib::Clock::now() + 1ms;
        fib::sleep_for(1ms);
        EXPECT_GE(fib::Clock::now(), deadline) << "woke before its deadline";
        woke = true;
    });
    sleeper.join();
    EXPECT_TRUE(woke);
    EXPECT_EQ(fib::TimerHeap::of_this_thread().size(), 0u);
}

// 256 KiB through a 64 KiB non-blocking pipe between two TLS fibers: the writer must wait in the
// Waiter for room, the reader for data, and every byte arrives in order.
TEST(L07_Memory, PipeIoBetweenTwoTlsFibersMovesExactBytes) {
    fib::FiberManager manager;
    fib::FiberTls tls(manager);
    fib::Waiter waiter;
    int fds[2];
    ASSERT_EQ(::pipe2(fds, O_NONBLOCK | O_CLOEXEC), 0);
    std::string sent(256 * 1024, '\0');
    for (std::size_t i = 0; i < sent.size(); ++i) sent[i] = static_cast<char>(i * 131 + i / 256);
    std::string received;
    fib::Fiber writer([&] {
        EXPECT_EQ(fib::io::write_all(fds[1], sent.data(), sent.size()),
                  static_cast<ssize_t>(sent.size()));
        EXPECT_EQ(fib::io::close(fds[1]), 0);
    });
    fib::Fiber reader([&] {
        char buffer[5000];
        for (int reads = 0; reads < 100'000; ++reads) {
            const ssize_t got = fib::io::read(fds[0], buffer, sizeof buffer);
            ASSERT_GE(got, 0) << "errno " << errno;
            if (got == 0) break;
            received.append(buffer, static_cast<std::size_t>(got));
        }
        EXPECT_EQ(fib::io::close(fds[0]), 0);
    });
    writer.join();
    reader.join();
    ASSERT_EQ(received.size(), sent.size());
    EXPECT_TRUE(received == sent) << "the bytes differ";
    EXPECT_GT(waiter.stats().wakeups, 0u) << "some io waited in the Waiter";
}

}  // namespace
