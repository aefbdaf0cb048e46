// L07_tcb_test.cpp — lesson 7: the TcbHead mirror against the running thread, a fiber's own control block, and the PT_TLS segments.
//
// glibc_tls.hpp mirrors a private glibc struct; these tests read each field
// another way (an instruction, a system call, a public function) so that a
// glibc that moved one fails here, by name, instead of crashing a fiber. The
// L07_Segments tests check what tls_segments() found against the addresses of
// this file's own thread_locals and of errno, and that a new block starts from
// each module's image (.tdata copied, .tbss zeroed). On AArch64 the mirror is
// tcbhead_t's two words and the struct pthread below tp.
#if defined(__x86_64__)
#include <asm/prctl.h>
#endif
#include <gtest/gtest.h>
#include <pthread.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>

#include "fib/fiber.hpp"
#include "fib/fiber_tls.hpp"
#include "fib/glibc_tls.hpp"
#include "fib/tls_segments.hpp"
#include "fib/tls_switch.hpp"

namespace {

pid_t tid_in_block(const fib::TcbHead* tp) {
    pid_t tid;
    std::memcpy(&tid, fib::descriptor_of(tp) + _thread_db_pthread_tid[2], sizeof tid);
    return tid;
}

#if defined(__aarch64__)

// tpidr_el0 read by instruction, not through the compiler's builtin.
const fib::TcbHead* tpidr_el0() {
    const fib::TcbHead* tp;
    asm volatile("mrs %0, tpidr_el0" : "=r"(tp));
    return tp;
}

TEST(L07_Tcb, MirrorMatchesTheRunningThreadsControlBlock) {
    // glibc sets multiple_threads in its creator's descriptor at the first pthread_create.
    std::thread([] {}).join();
    const fib::TcbHead* tp = fib::thread_pointer();
    EXPECT_EQ(tp, tpidr_el0());
    // struct pthread lies right below tp; the TLS blocks above it (errno among them).
    EXPECT_EQ(fib::descriptor_of(tp), reinterpret_cast<char*>(pthread_self()));
    EXPECT_GE(reinterpret_cast<const char*>(&errno), reinterpret_cast<const char*>(tp) + sizeof *tp);
    EXPECT_NE(tp->dtv, nullptr);
    EXPECT_EQ(tp->thread, nullptr);  // glibc leaves `private` alone on its own blocks
    EXPECT_NE(*fib::multiple_threads_of(tp), 0);
    EXPECT_EQ(tid_in_block(tp), gettid());
}

// Checked on the fiber itself: gtest's EXPECTs work from any fiber. On AArch64
// pthread_self() is tp - sizeof(struct pthread): the block's own descriptor.
TEST(L07_Tcb, FiberRunsOnItsOwnBlockAndDescriptorWithTheThreadsTid) {
    fib::FiberManager manager;
    fib::FiberTls tls(manager);
    const fib::TcbHead* main_tp = fib::thread_pointer();
    bool ran = false;
    fib::Fiber fiber([&] {
        const fib::TcbHead* tp = fib::thread_pointer();
        EXPECT_NE(tp, main_tp);
        EXPECT_EQ(tpidr_el0(), tp);
        EXPECT_EQ(tp->thread, main_tp);  // which thread the block runs on
        EXPECT_EQ(reinterpret_cast<char*>(pthread_self()), fib::descriptor_of(tp));
        EXPECT_NE(tp->dtv, nullptr);
        EXPECT_NE(tp->dtv, main_tp->dtv);
        EXPECT_EQ(*fib::multiple_threads_of(tp), 1);
        EXPECT_EQ(tid_in_block(tp), gettid());
        ran = true;
    });
    fiber.join();
    EXPECT_TRUE(ran);
    EXPECT_EQ(tpidr_el0(), main_tp);  // main's block again
}

#else

// A word of the running code's control block, read the way compiled code does.
template <int Offset>
std::uintptr_t fs_word() {
    std::uintptr_t value;
    asm volatile("movq %%fs:%c1, %0" : "=r"(value) : "i"(Offset));
    return value;
}

// The %fs base as the kernel has it: independent of the TCB's self pointer.
const void* fs_base_from_kernel() {
    unsigned long base = 0;
    if (syscall(SYS_arch_prctl, ARCH_GET_FS, &base) != 0) return nullptr;
    return reinterpret_cast<const void*>(base);
}

// The %fs base by instruction where the CPU and kernel allow it.
const void* fs_base_from_register() {
    if (!fib::fsgsbase_usable()) return fs_base_from_kernel();
    void* base;
    asm volatile("rdfsbase %0" : "=r"(base));
    return base;
}

TEST(L07_Tcb, MirrorMatchesTheRunningThreadsControlBlock) {
    // glibc sets multiple_threads in its creator's TCB at the first pthread_create.
    std::thread([] {}).join();
    const fib::TcbHead* tp = fib::thread_pointer();
    EXPECT_EQ(static_cast<const void*>(tp), fs_base_from_register());
    EXPECT_EQ(static_cast<const void*>(tp), fs_base_from_kernel());
    EXPECT_EQ(tp->tcb, tp);
    EXPECT_EQ(tp->self, reinterpret_cast<void*>(pthread_self()));
    EXPECT_NE(tp->dtv, nullptr);
    EXPECT_EQ(tp->stack_guard, fs_word<0x28>());
    EXPECT_NE(tp->stack_guard, 0u);
    EXPECT_EQ(tp->pointer_guard, fs_word<0x30>());
    EXPECT_NE(tp->multiple_threads, 0);
    EXPECT_EQ(tid_in_block(tp), gettid());
}

#endif

// cleanup_jmp_buf_at(), derived from a field glibc exports, finds where the thread's unwinding
// ends: a buffer in a frame of its own stack, above the running one (main's in
// __libc_start_call_main, a new thread's in start_thread), on main and on a new thread.
// (The frame's address, not a local's: ASan may keep locals on a stack of its own.)
bool cleanup_jmp_buf_lies_above_this_frame() {
    const char* here = static_cast<const char*>(__builtin_frame_address(0));
    char* buffer;
    std::memcpy(&buffer, fib::descriptor_of(fib::thread_pointer()) + fib::cleanup_jmp_buf_at(), sizeof buffer);
    return buffer > here && buffer - here < 8 * 1024 * 1024;
}

TEST(L07_Tcb, CleanupJmpBufOffsetFindsTheUnwindBufferOnMainAndOnANewThread) {
    EXPECT_TRUE(cleanup_jmp_buf_lies_above_this_frame());
    bool on_thread = false;
    std::thread([&on_thread] { on_thread = cleanup_jmp_buf_lies_above_this_frame(); }).join();
    EXPECT_TRUE(on_thread);
}

#if defined(__x86_64__)

// Checked on the fiber itself: gtest's EXPECTs work from any fiber.
TEST(L07_Tcb, FiberRunsOnItsOwnBlockWithTheThreadsGuardsTidAndSelf) {
    fib::FiberManager manager;
    fib::FiberTls tls(manager);
    const fib::TcbHead* main_tp = fib::thread_pointer();
    const pthread_t main_thread = pthread_self();
    bool ran = false;
    fib::Fiber fiber([&] {
        const fib::TcbHead* tp = fib::thread_pointer();
        EXPECT_NE(tp, main_tp);
        EXPECT_EQ(fs_base_from_register(), static_cast<const void*>(tp));
        EXPECT_EQ(tp->tcb, tp);
        // self is the thread that runs the fiber, not the block.
        EXPECT_EQ(tp->self, main_tp);
        EXPECT_TRUE(pthread_equal(pthread_self(), main_thread));
        EXPECT_NE(tp->dtv, nullptr);
        EXPECT_NE(tp->dtv, main_tp->dtv);
        EXPECT_EQ(fs_word<0x28>(), main_tp->stack_guard);
        EXPECT_EQ(fs_word<0x30>(), main_tp->pointer_guard);
        EXPECT_EQ(tid_in_block(tp), gettid());
        ran = true;
    });
    fiber.join();
    EXPECT_TRUE(ran);
    EXPECT_EQ(fs_base_from_kernel(), static_cast<const void*>(main_tp));  // main's block again
}

#endif

// The kernel writes the CPU number only into the thread's registered rseq
// area; a fiber's block must say "not registered" (negative) so that
// sched_getcpu() asks the kernel rather than reading a stale 0.
TEST(L07_Tcb, SchedGetcpuInAFiberAgreesWithTheGetcpuSystemCall) {
    fib::FiberManager manager;
    fib::FiberTls tls(manager);
    const long cpus = sysconf(_SC_NPROCESSORS_CONF);
    std::vector<int> from_libc;
    bool agreed = false;
    int rseq_cpu_field = 0;
    fib::Fiber fiber([&] {
        if (__rseq_size > 0)
            std::memcpy(&rseq_cpu_field,
                        reinterpret_cast<const char*>(fib::thread_pointer()) + __rseq_offset + 4,
                        sizeof rseq_cpu_field);
        // The thread may migrate between the two calls: retry until they agree.
        for (int attempt = 0; attempt < 100 && !agreed; ++attempt) {
            const int libc_cpu = sched_getcpu();
            unsigned kernel_cpu = ~0u;
            syscall(SYS_getcpu, &kernel_cpu, nullptr, nullptr);
            from_libc.push_back(libc_cpu);
            agreed = libc_cpu == static_cast<int>(kernel_cpu);
        }
    });
    fiber.join();
    EXPECT_TRUE(__rseq_size == 0 || rseq_cpu_field < 0) << "the fiber's rseq cpu_id: " << rseq_cpu_field;
    EXPECT_TRUE(agreed);
    for (const int cpu : from_libc) {
        EXPECT_GE(cpu, 0);
        EXPECT_LT(cpu, cpus);
    }
}

// Pinning the thread to one CPU (the highest allowed: not 0 on a machine with
// two) makes the answer known in advance, so a silent 0 cannot pass.
TEST(L07_Tcb, SchedGetcpuInAFiberReportsTheCpuTheThreadIsPinnedTo) {
    cpu_set_t allowed;
    ASSERT_EQ(sched_getaffinity(0, sizeof allowed, &allowed), 0);
    int target = -1;
    for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu)
        if (CPU_ISSET(cpu, &allowed)) target = cpu;
    ASSERT_GE(target, 0);
    cpu_set_t only;
    CPU_ZERO(&only);
    CPU_SET(target, &only);
    if (sched_setaffinity(0, sizeof only, &only) != 0) GTEST_SKIP() << "cannot pin: " << std::strerror(errno);
    int seen = -1;
    {
        fib::FiberManager manager;
        fib::FiberTls tls(manager);
        fib::Fiber fiber([&] { seen = sched_getcpu(); });
        fiber.join();
    }
    sched_setaffinity(0, sizeof allowed, &allowed);
    EXPECT_EQ(seen, target);
}

// ---- L07_Segments ----------------------------------------------------------------------------

thread_local int segment_probe;           // .tbss of the executable
thread_local int answer = 42;             // .tdata: its image holds 42
thread_local char zeroed_buffer[4096];    // .tbss: a new block gets zeros

// The one segment whose block (below this thread's tp; above it on AArch64)
// holds `address`, or nullptr if none or several do.
const fib::TlsSegment* only_segment_holding(const void* address) {
    const auto at = reinterpret_cast<const char*>(address);
    const fib::TlsSegment* found = nullptr;
    for (const fib::TlsSegment& segment : fib::tls_segments()) {
        const char* block = fib::segment_block(fib::thread_pointer(), segment);
        if (at < block || at >= block + segment.size) continue;
        if (found) return nullptr;
        found = &segment;
    }
    return found;
}

TEST(L07_Segments, SegmentsAreWellFormedAndTheirBlocksDoNotOverlap) {
    const std::span<const fib::TlsSegment> segments = fib::tls_segments();
    ASSERT_FALSE(segments.empty());
    for (const fib::TlsSegment& a : segments) {
        EXPECT_LE(a.image_size, a.size) << a.module;
        EXPECT_NE(a.align, 0u) << a.module;
        EXPECT_EQ(a.align & (a.align - 1), 0u) << a.module;  // a power of two
#if defined(__aarch64__)
        EXPECT_GE(a.offset, sizeof(fib::TcbHead)) << a.module;  // all of it above the TCB
#else
        EXPECT_LE(a.size, a.offset) << a.module;              // all of it below tp
#endif
        // The blocks [start, start + size) are disjoint.
        const char* a_start = fib::segment_block(fib::thread_pointer(), a);
        for (const fib::TlsSegment& b : segments) {
            const char* b_start = fib::segment_block(fib::thread_pointer(), b);
            EXPECT_TRUE(&a == &b || a_start + a.size <= b_start || b_start + b.size <= a_start)
                << a.module << " and " << b.module;
        }
    }
}

TEST(L07_Segments, ExactlyOneSegmentHoldsAThreadLocalOfTheExecutable) {
    const fib::TlsSegment* segment = only_segment_holding(&segment_probe);
    ASSERT_NE(segment, nullptr);
    EXPECT_STREQ(segment->module, "");
}

// Statically linked, libc's TLS is part of the executable's one segment, and
// no segment is the C library's own.
TEST(L07_Segments, ErrnoLiesInTheCLibrarysSegmentWhichIsItsOwnOnlyWhenDynamic) {
    const fib::TlsSegment* holding_errno = only_segment_holding(&errno);
    ASSERT_NE(holding_errno, nullptr);
    const std::span<const fib::TlsSegment> segments = fib::tls_segments();
    const auto c_libraries = std::count_if(segments.begin(), segments.end(),
                                           [](const fib::TlsSegment& s) { return s.c_library; });
#ifdef FIB_STATIC
    EXPECT_EQ(segments.size(), 1u);
    EXPECT_EQ(c_libraries, 0);
#else
    EXPECT_EQ(c_libraries, 1);
    EXPECT_TRUE(holding_errno->c_library);
    EXPECT_NE(std::strstr(holding_errno->module, "libc.so"), nullptr) << holding_errno->module;
#endif
}

std::size_t nonzero_bytes(const char* bytes, std::size_t size) {
    return static_cast<std::size_t>(std::count_if(bytes, bytes + size, [](char c) { return c != 0; }));
}

// Main writes its own copies first: a fiber's must come from the images, in a
// new block and again in a recycled one that the first fiber wrote to.
TEST(L07_Segments, NewAndRecycledBlocksCopyTdataAndZeroTbssWhateverMainWrote) {
    fib::FiberManager manager;
    fib::FiberTls tls(manager);
    answer = 7;
    std::memset(zeroed_buffer, 0xAB, sizeof zeroed_buffer);
    std::array<int, 2> answers{};
    std::array<std::size_t, 2> nonzero{};
    for (int i = 0; i < 2; ++i) {
        fib::Fiber fiber([&, i] {
            answers[i] = answer;
            nonzero[i] = nonzero_bytes(zeroed_buffer, sizeof zeroed_buffer);
            answer = 99;
            std::memset(zeroed_buffer, 0xCD, sizeof zeroed_buffer);
        });
        fiber.join();
    }
    EXPECT_EQ(answers, (std::array<int, 2>{42, 42}));
    EXPECT_EQ(nonzero, (std::array<std::size_t, 2>{0, 0}));
    EXPECT_EQ(tls.stats().tls_blocks_created, 1u);  // the second fiber reused the first's block
    EXPECT_EQ(answer, 7);
    EXPECT_EQ(nonzero_bytes(zeroed_buffer, sizeof zeroed_buffer), sizeof zeroed_buffer);
    answer = 42;
    std::memset(zeroed_buffer, 0, sizeof zeroed_buffer);
}

}  // namespace
