// L11_probe_test.cpp — lesson 11: where the kernel refuses io_uring (a seccomp filter saying
// EPERM, as a container's default profile does, or ENOSYS, as a kernel without it does), a
// "uring" Waiter runs on epoll and says so in exactly one line per process, however many
// Waiters on however many threads ask. And the misuse of a ring: a Waiter destroyed while the
// kernel holds a fiber's read names the fiber and the read, and a child of fork() that uses
// its parent's ring Waiter stops.
#include <gtest/gtest.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

#include "L01_emulator.hpp"
#include "L01_sanitizers.hpp"
#include "L04_waiter_harness.hpp"
#include "L11_uring_harness.hpp"
#include "fib/fiber.hpp"
#include "fib/io.hpp"
#include "fib/pollers.hpp"
#include "fib/waiter.hpp"

namespace {

using namespace l04_waiter;
using namespace l11_uring;

// Whether this process may set up a ring at all (the probe's first question, asked directly).
bool kernel_gives_io_uring() {
    io_uring_params params{};
    const long fd = ::syscall(__NR_io_uring_setup, 2, &params);
    if (fd < 0) return false;
    ::close(static_cast<int>(fd));
    return true;
}

// What scripts/without-io-uring.py installs, in C++: io_uring_setup, io_uring_enter and
// io_uring_register fail with `error`; every other call is allowed.
bool refuse_io_uring(int error) {
#if defined(__aarch64__)
    constexpr std::uint32_t this_arch = AUDIT_ARCH_AARCH64;
#else
    constexpr std::uint32_t this_arch = AUDIT_ARCH_X86_64;
#endif
    sock_filter program[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, arch)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, this_arch, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_io_uring_setup, 3, 0),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_io_uring_enter, 2, 0),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_io_uring_register, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | static_cast<unsigned>(error)),
    };
    const sock_fprog filter{static_cast<unsigned short>(std::size(program)), program};
    return ::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 &&
           ::syscall(__NR_seccomp, SECCOMP_SET_MODE_FILTER, 0, &filter) == 0;
}

// In a death test's child (a fresh process: the once-per-process line not said yet): refuse
// io_uring with `error`, then make a "uring" Waiter on each of two threads at the same time.
// Each must be an epoll Waiter that works; stderr gets the fallback's line and then ours.
[[noreturn]] void two_threads_without_io_uring(int error) {
    if (!refuse_io_uring(error)) {
        std::fprintf(stderr, "cannot install the seccomp filter: %s\n", std::strerror(errno));
        std::_Exit(2);
    }
    std::string names[2];
    auto thread_main = [&names](int i) {
        fib::FiberManager manager;
        fib::Waiter waiter("uring");
        Pair pipe = make_fds();
        char byte = 0;
        fib::Fiber reader([&] { fib::io::read(pipe.first.get(), &byte, 1); });
        fib::this_fiber::yield();
        if (::write(pipe.second.get(), "x", 1) != 1) return;
        reader.join();
        if (byte == 'x') names[i] = waiter.poller().name();
    };
    std::thread first(thread_main, 0), second(thread_main, 1);
    first.join();
    second.join();
    std::fprintf(stderr, "waiters: %s %s\n", names[0].c_str(), names[1].c_str());
    std::_Exit(0);
}

// The whole of stderr, anchored at both ends: the one line, then the test's own.
const char* const kRefusedWithEperm =
    "^(fib: FIB_SCHEDULE_SEED=[^\n]*\n)?fib: no io_uring here \\(io_uring_setup: Operation not permitted \\([^\n]*\\)\\); "
    "the Waiter uses epoll\nwaiters: epoll epoll\n$";
const char* const kRefusedWithEnosys =
    "^(fib: FIB_SCHEDULE_SEED=[^\n]*\n)?fib: no io_uring here \\(io_uring_setup: Function not implemented \\([^\n]*\\)\\); "
    "the Waiter uses epoll\nwaiters: epoll epoll\n$";

TEST(L11_ProbeDeathTest, RefusedWithEpermTwoWaitersOnTwoThreadsRunOnEpollAndSayItInOneLine) {
    SKIP_UNDER_THREAD_SANITIZER("the seccomp filter is installed after TSan's threads start");
    SKIP_UNDER_EMULATOR("qemu-user implements no seccomp filters (and no io_uring: every test "
                        "there runs on the fallback)");
    EXPECT_EXIT(two_threads_without_io_uring(EPERM), ::testing::ExitedWithCode(0), kRefusedWithEperm);
}

TEST(L11_ProbeDeathTest, RefusedWithEnosysTwoWaitersOnTwoThreadsRunOnEpollAndSayItInOneLine) {
    SKIP_UNDER_THREAD_SANITIZER("the seccomp filter is installed after TSan's threads start");
    SKIP_UNDER_EMULATOR("qemu-user implements no seccomp filters (and no io_uring: every test "
                        "there runs on the fallback)");
    EXPECT_EXIT(two_threads_without_io_uring(ENOSYS), ::testing::ExitedWithCode(0), kRefusedWithEnosys);
}

// In this process: a "uring" Waiter runs on the ring exactly when the kernel gives one. Under
// scripts/without-io-uring.py (make test-lesson11's second run) this checks that the fallback
// really happened.
TEST(L11_Probe, AUringWaiterRunsOnTheRingExactlyWhenTheKernelGivesOne) {
    fib::FiberManager manager;
    fib::Waiter waiter("uring");
    if (kernel_gives_io_uring()) {
        EXPECT_STREQ(waiter.poller().name(), "uring");
        EXPECT_NE(ring_of(waiter), nullptr);
    } else {
        EXPECT_STREQ(waiter.poller().name(), "epoll");
        EXPECT_EQ(ring_of(waiter), nullptr);
    }
}

// ---- Misuse ---------------------------------------------------------------------------------

// A fiber's read is in the kernel when main destroys the Waiter: nothing but the kernel could
// end it, so the program stops naming the fiber and the operation. The fd is moved to number
// 100 so that the message is the same in the death test's child.
void destroy_the_waiter_under_a_held_read() {
    fib::FiberManager manager;
    fib::Waiter waiter("uring");
    Pair pair = make_fds(true);
    const int fd = ::dup3(pair.first.get(), 100, O_CLOEXEC);
    char buffer[8];
    fib::Fiber({.name = "stuck-reader"}, [&] { fib::io::read(fd, buffer, sizeof buffer); }).detach();
    for (int i = 0; i < 3; ++i) fib::this_fiber::yield();  // the read is in the kernel
    pair.first.release();  // leave every fd open: closing one would end the read
    pair.second.release();
}

TEST(L11_MisuseDeathTest, AWaiterDestroyedWhileTheKernelHoldsAReadNamesTheFiberAndTheRead) {
    if (!kernel_gives_io_uring()) GTEST_SKIP() << "io_uring is refused here: nothing is held by a ring";
    EXPECT_DEATH(destroy_the_waiter_under_a_held_read(),
                 "stuck-reader[^\n]*: fib::io::read on fd 100, which the kernel holds \\(io_uring\\)");
}

// After fork() the child shares its parent's ring, mappings and all. A child that goes on
// using the parent's ring Waiter stops with a message; the parent's own Waiter is untouched.
int child_uses_the_parents_ring_waiter() {
    fib::FiberManager manager;
    fib::Waiter waiter("uring");
    Pair pipe = make_fds();
    char byte = 0;
    fib::Fiber reader([&] { fib::io::read(pipe.first.get(), &byte, 1); });
    fib::this_fiber::yield();  // the read is in the ring; the Waiter's fiber is queued
    const pid_t child = ::fork();
    if (child == 0) {
        fib::this_fiber::yield();  // the child's copy of the Waiter asks the ring
        std::_Exit(0);
    }
    int status = 0;
    ::waitpid(child, &status, 0);
    [[maybe_unused]] ssize_t written = ::write(pipe.second.get(), "p", 1);
    reader.join();  // the parent's Waiter still works
    return WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT && byte == 'p' ? 0 : 1;
}

TEST(L11_MisuseDeathTest, AChildProcessThatUsesItsParentsRingWaiterStops) {
    SKIP_UNDER_THREAD_SANITIZER("TSan, in a child forked from a process with threads, reports "
                                "the parent's fibers' writes as races");
    if (!kernel_gives_io_uring()) GTEST_SKIP() << "io_uring is refused here: there is no ring to share";
    EXPECT_EXIT(std::exit(child_uses_the_parents_ring_waiter()), ::testing::ExitedWithCode(0),
                "fib: fatal: a Waiter made before fork\\(\\) was used in the child: the child shares "
                "the parent's io_uring");
}

}  // namespace
