// L07_tls_test.cpp — lesson 7: thread_local, errno, libc, libstdc++ and a shared library's TLS, per fiber.
//
// Every test runs fibers on TLS blocks of their own (FiberTls) and checks that
// what a thread keeps in TLS is kept per fiber across yields: errno, stdio and
// malloc state, the executable's thread_locals (started from their image,
// destroyed at the fiber's exit) and a shared library's, reached through the
// fiber's own DTV. (libstdc++'s exception globals: L07_exceptions_test.cpp.) The last test turns
// thread_locals off and sees the lesson-2 behaviour again: one copy per thread.
#include <cxxabi.h>
#include <gtest/gtest.h>

#include <array>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <iostream>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "L02_schedule.hpp"
#include "fib/fiber.hpp"
#include "fib/fiber_tls.hpp"
#include "L07_run_fibers.hpp"

#ifndef FIB_STATIC
extern "C" int* l06_probe_counter();  // tests/L07_probe_lib.cpp: thread_local, starts at 1000
#endif

namespace {

using fib::this_fiber::yield;

using l06::run_fibers;

TEST(L07_Tls, ErrnoIsPerFiberAcrossYieldsAndMainKeepsItsOwn) {
    fib::FiberManager manager;
    fib::FiberTls tls(manager);
    std::array<int, 3> mismatches{}, final_errno{};
    std::array<const int*, 3> errno_at{};
    errno = 99;
    run_fibers(3, [&](int i) {
        errno = i + 1;
        errno_at[i] = &errno;
        for (int round = 0; round < 5; ++round) {
            yield();
            mismatches[i] += errno != i + 1;
        }
        final_errno[i] = errno;
    });
    const int main_errno = errno;
    EXPECT_EQ(main_errno, 99);
    EXPECT_EQ(mismatches, (std::array<int, 3>{0, 0, 0}));
    EXPECT_EQ(final_errno, (std::array<int, 3>{1, 2, 3}));
    const std::set<const int*> addresses(errno_at.begin(), errno_at.end());
    EXPECT_EQ(addresses.size(), 3u);
    EXPECT_EQ(addresses.count(&errno), 0u);
}

TEST(L07_Tls, FormattingStreamsAndGrowingStringsWorkInInterleavedFibers) {
    fib::FiberManager manager;
    fib::FiberTls tls(manager);
    std::array<std::string, 2> formatted, streamed, grown;
    run_fibers(2, [&](int i) {
        for (int round = 0; round < 3; ++round) {
            char line[64];
            std::snprintf(line, sizeof line, "%d:%s:%.2f:%x;", i, "fib", 1.5 * round, 255 + round);
            formatted[i] += line;
            yield();
            std::ostringstream out;
            out << i << '/' << round << '/' << 0.25 << '/' << std::hex << 4096 + round << ';';
            streamed[i] += out.str();
            yield();
        }
        for (int chunk = 0; chunk < 64; ++chunk) {
            grown[i].append(1024, static_cast<char>('x' + i));
            yield();
        }
        if (i == 0) {
            std::printf("L07_Tls: printf from a fiber with its own TLS\n");
            std::cout << "L07_Tls: std::cout from a fiber with its own TLS" << std::endl;
        }
    });
    EXPECT_EQ(formatted[0], "0:fib:0.00:ff;0:fib:1.50:100;0:fib:3.00:101;");
    EXPECT_EQ(formatted[1], "1:fib:0.00:ff;1:fib:1.50:100;1:fib:3.00:101;");
    EXPECT_EQ(streamed[0], "0/0/0.25/1000;0/1/0.25/1001;0/2/0.25/1002;");
    EXPECT_EQ(streamed[1], "1/0/0.25/1000;1/1/0.25/1001;1/2/0.25/1002;");
    EXPECT_EQ(grown[0], std::string(64 * 1024, 'x'));
    EXPECT_EQ(grown[1], std::string(64 * 1024, 'y'));
}

// Sizes from one byte to a megabyte (past the mmap threshold) and odd ones,
// interleaved across fibers; memory also changes hands between main and a fiber.
TEST(L07_Tls, MallocAndFreeOfManySizesInInterleavedFibers) {
    fib::FiberManager manager;
    fib::FiberTls tls(manager);
    std::vector<std::size_t> sizes;
    for (std::size_t size = 1; size <= (1u << 20); size *= 2) sizes.insert(sizes.end(), {size, size * 3 + 1});
    std::array<std::size_t, 3> corrupted{};
    void* from_main = std::malloc(100);
    void* from_fiber = nullptr;
    run_fibers(3, [&](int i) {
        const char tag = static_cast<char>('a' + i);
        std::vector<char*> blocks;
        for (const std::size_t size : sizes) {
            blocks.push_back(static_cast<char*>(std::malloc(size)));
            std::memset(blocks.back(), tag, size);
            if (blocks.size() % 4 == 0) yield();
        }
        for (std::size_t k = 0; k < blocks.size(); ++k) {
            for (std::size_t b = 0; b < sizes[k]; b += 61) corrupted[i] += blocks[k][b] != tag;
            std::free(blocks[k]);
            if (k % 4 == 0) yield();
        }
        if (i == 0) {
            std::free(from_main);
            from_fiber = std::malloc(200);
        }
    });
    std::free(from_fiber);
    EXPECT_EQ(corrupted, (std::array<std::size_t, 3>{0, 0, 0}));
}

thread_local int turns_taken = 10;

TEST(L07_Tls, ThreadLocalCounterIsPerFiberAndRestartsInARecycledBlock) {
    fib::FiberManager manager;
    fib::FiberTls tls(manager);
    std::array<int, 4> final_counts{};
    run_fibers(4, [&](int i) {
        for (int turn = 0; turn <= i; ++turn) {
            ++turns_taken;
            yield();
        }
        final_counts[i] = turns_taken;
    });
    EXPECT_EQ(final_counts, (std::array<int, 4>{11, 12, 13, 14}));
    EXPECT_EQ(turns_taken, 10);
    const std::size_t created = tls.stats().tls_blocks_created;
    int later_start = -1;
    run_fibers(1, [&](int) { later_start = turns_taken++; });
    EXPECT_EQ(later_start, 10);
    EXPECT_EQ(tls.stats().tls_blocks_created, created);  // it ran on a recycled block
}

// A thread_local whose constructor and destructor log the fiber that ran them.
struct LifeEvent {
    std::string what;
    std::uint64_t fiber;
    bool operator==(const LifeEvent&) const = default;
};
std::vector<LifeEvent> life_log;

struct Tracked {
    int uses = 0;
    Tracked() { life_log.push_back({"construct", fib::this_fiber::id()}); }
    ~Tracked() { life_log.push_back({"destroy", fib::this_fiber::id()}); }
};

Tracked& tracked() {
    thread_local Tracked instance;
    return instance;
}

TEST(L07_Tls, ThreadLocalObjectIsDestroyedOnceAtItsFibersExitOnThatFiber) {
    EXPECTS_FIFO_ORDER();
    life_log.clear();
    fib::FiberManager manager;
    fib::FiberTls tls(manager);
    int uses = 0;
    std::size_t events_as_body_ended = 0;
    // Fiber 1 touches the object across a yield; fiber 2, a bystander, never does.
    run_fibers(2, [&](int i) {
        if (i == 1) {
            yield();
            yield();
            return;
        }
        ++tracked().uses;
        yield();
        uses = ++tracked().uses;
        events_as_body_ended = life_log.size();
    });
    EXPECT_EQ(uses, 2);
    EXPECT_EQ(events_as_body_ended, 1u);
    EXPECT_EQ(life_log, (std::vector<LifeEvent>{{"construct", 1}, {"destroy", 1}}));

    // Both blocks again, the toucher's among them: made anew on each.
    const std::size_t created = tls.stats().tls_blocks_created;
    std::array<int, 2> again_uses{};
    run_fibers(2, [&](int i) { again_uses[i] = ++tracked().uses; });
    EXPECT_EQ(tls.stats().tls_blocks_created, created);
    EXPECT_EQ(again_uses, (std::array<int, 2>{1, 1}));
    EXPECT_EQ(life_log, (std::vector<LifeEvent>{{"construct", 1}, {"destroy", 1}, {"construct", 3},
                                                {"destroy", 3}, {"construct", 4}, {"destroy", 4}}));
}

TEST(L07_Tls, SharedLibraryThreadLocalIsPerFiber) {
#ifdef FIB_STATIC
    GTEST_SKIP() << "statically linked: there is no shared library";
#else
    fib::FiberManager manager;
    fib::FiberTls tls(manager);
    int* main_counter = l06_probe_counter();
    *main_counter = 1;
    std::array<int*, 3> counters{};
    std::array<int, 3> first_seen{}, final_values{};
    run_fibers(3, [&](int i) {
        counters[i] = l06_probe_counter();
        first_seen[i] = *counters[i];
        for (int turn = 0; turn <= i; ++turn) {
            ++*l06_probe_counter();
            yield();
        }
        final_values[i] = *l06_probe_counter();
    });
    EXPECT_EQ(first_seen, (std::array<int, 3>{1000, 1000, 1000}));
    EXPECT_EQ(final_values, (std::array<int, 3>{1001, 1002, 1003}));
    const std::set<int*> addresses(counters.begin(), counters.end());
    EXPECT_EQ(addresses.size(), 3u);
    EXPECT_EQ(addresses.count(main_counter), 0u);
    EXPECT_EQ(l06_probe_counter(), main_counter);
    EXPECT_EQ(*main_counter, 1);
    *main_counter = 1000;
#endif
}

thread_local int shared_when_off = 0;

TEST(L07_Tls, WithThreadLocalsOffFibersShareTheThreadsTls) {
    fib::FiberManager manager;
    fib::FiberTls tls(manager, fib::FiberTlsOptions{.thread_locals = false, .fiber_locals = true});
    shared_when_off = 5;
    const fib::TcbHead* fiber_tp = nullptr;
    const int* fiber_address = nullptr;
    run_fibers(1, [&](int) {
        fiber_tp = fib::thread_pointer();
        fiber_address = &shared_when_off;
        ++shared_when_off;
    });
    EXPECT_EQ(fiber_tp, fib::thread_pointer());
    EXPECT_EQ(fiber_address, &shared_when_off);
    EXPECT_EQ(shared_when_off, 6);
    EXPECT_EQ(tls.stats().tls_blocks_created, 0u);
    shared_when_off = 0;
}

}  // namespace
