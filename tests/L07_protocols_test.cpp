// L07_protocols_test.cpp — lesson 7: glibc's thread protocols on fibers with TLS blocks of their own
// (thread_protocols.hpp): a fiber starting the first thread leaves the thread's own block
// multi-threaded; setgid() and setuid() from another thread return while a TLS fiber runs; a
// fork from a TLS fiber gives a child that can malloc, print and exit; pthread_cancel and
// pthread_exit stop with a message naming the fiber (on AArch64, pthread_cancel is refused
// instead); a thread started from a TLS fiber runs, also where rseq cannot be registered; a
// signal handler on a TLS fiber sees the fiber's errno and thread_locals; a worker thread's
// fibers resolve names with its resolver state, not main's. The scenarios that need a
// single-threaded start run in a death test's re-executed child.
#include <gtest/gtest.h>
#include <grp.h>
#include <netdb.h>
#include <resolv.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/single_threaded.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "fib/fiber.hpp"
#include "fib/fiber_tls.hpp"
#include "L01_emulator.hpp"

extern "C" const std::uint32_t _thread_db_pthread_tid[3];

namespace {

pid_t tid_in_running_block() {
    pid_t tid;
    std::memcpy(&tid, fib::descriptor_of(fib::thread_pointer()) + _thread_db_pthread_tid[2], sizeof tid);
    return tid;
}

// Small blocks freed and taken again: with tcache_count=0 every one goes through malloc's
// fastbins, whose compare-and-swap drops its lock prefix while libc believes it is alone.
void churn_small_blocks(int rounds) {
    std::vector<std::unique_ptr<char[]>> blocks(64);
    for (int i = 0; i < rounds; ++i) blocks[i % 64] = std::make_unique<char[]>(16 + i % 48);
}

// The process starts single-threaded, and a TLS fiber starts its first thread.
void fiber_starts_the_first_thread() {
    if (!__libc_single_threaded) std::_Exit(3);
    fib::FiberManager manager;
    fib::FiberTls tls(manager);
    std::thread worker;
    fib::Fiber starter([&worker] { worker = std::thread([] { churn_small_blocks(300000); }); });
    starter.join();
    churn_small_blocks(300000);  // on main's own block, while the worker churns too
    worker.join();
    std::_Exit(*fib::multiple_threads_of(fib::thread_pointer()) == 1 && !__libc_single_threaded ? 0 : 2);
}

TEST(L07_ProtocolsDeathTest, AFiberStartingTheFirstThreadLeavesTheThreadsOwnBlockMultiThreaded) {
    ASSERT_EQ(setenv("GLIBC_TUNABLES", "glibc.malloc.tcache_count=0", 1), 0);
    EXPECT_EXIT(fiber_starts_the_first_thread(), testing::ExitedWithCode(0), "");
    unsetenv("GLIBC_TUNABLES");
}

// A worker thread's TLS fiber spins (never parks, so the thread is on the fiber's block) while
// main, then a TLS fiber of main's, change the process's ids: glibc signals every other thread
// and waits for each to say done.
void change_ids_while_a_tls_fiber_runs() {
    std::atomic<bool> running{false}, stop{false};
    std::thread worker([&] {
        fib::FiberManager manager;
        fib::FiberTls tls(manager);
        fib::Fiber spinner([&] {
            running = true;
            while (!stop) fib::this_fiber::yield();
        });
        spinner.join();
    });
    while (!running) std::this_thread::yield();
    alarm(10);  // a regression hangs in setgid(): end the child with the watchdog's message
    const gid_t groups[] = {getgid()};
    bool changed = setgid(getgid()) == 0 && setuid(getuid()) == 0 && setgroups(1, groups) == 0;
    // And from a TLS fiber of main's: glibc's caller skips its own thread, found through self
    // on x86-64. On AArch64 its self is the fiber's block, so it signals its own thread too
    // (qemu-aarch64 -strace shows tgkill of its own tid with 33), and the wrapper runs that.
    fib::FiberManager manager;
    fib::FiberTls tls(manager);
    fib::Fiber changer([&changed] { changed = changed && setgid(getgid()) == 0; });
    changer.join();
    stop = true;
    worker.join();
    std::_Exit(changed ? 0 : 2);
}

TEST(L07_ProtocolsDeathTest, SetgidSetuidAndSetgroupsFromAnotherThreadReturnWhileATlsFiberRuns) {
    EXPECT_EXIT(change_ids_while_a_tls_fiber_runs(), testing::ExitedWithCode(0), "");
}

TEST(L07_Protocols, ForkFromATlsFiberGivesAChildThatMallocsPrintsAndExits) {
    fib::FiberManager manager;
    fib::FiberTls tls(manager);
    int status = -1;
    fib::Fiber forker([&status] {
        const pid_t child = fork();
        if (child == 0) {
            auto text = std::make_unique<char[]>(100);
            std::snprintf(text.get(), 100, "child %d", static_cast<int>(getpid()));
            std::FILE* sink = std::fopen("/dev/null", "w");
            const bool printed = sink && std::fprintf(sink, "%s\n", text.get()) > 0;
            if (sink) std::fclose(sink);
            // Mutexes record their owner by the block's tid, which must be the child's now.
            pthread_mutexattr_t attributes;
            pthread_mutexattr_init(&attributes);
            pthread_mutexattr_settype(&attributes, PTHREAD_MUTEX_ERRORCHECK);
            pthread_mutex_t mutex;
            pthread_mutex_init(&mutex, &attributes);
            const bool locked = pthread_mutex_lock(&mutex) == 0 && pthread_mutex_unlock(&mutex) == 0;
            const int code = printed && locked && tid_in_running_block() == gettid() ? 0 : 1;
#if defined(__SANITIZE_ADDRESS__)
            // LeakSanitizer's check at exit scans main's stack, not this fiber's, and would
            // report every object the fiber's frames still hold.
            std::_Exit(code);
#endif
            std::exit(code);
        }
        waitpid(child, &status, 0);
    });
    forker.join();
    ASSERT_TRUE(WIFEXITED(status)) << "status " << status;
    EXPECT_EQ(WEXITSTATUS(status), 0);
}

// pthread_create decides whether the new thread registers an rseq area from its creator's
// (rseq_area.cpu_id, read through THREAD_SELF: on AArch64 the fiber's block): a block's says
// "registration failed", so a thread started on a fiber does not try. Where the rseq system
// call fails (qemu-user, or a seccomp filter that refuses it), a try aborts the new thread with
// "Fatal glibc error: rseq registration failed".
TEST(L07_Protocols, ThreadStartedFromATlsFiberRunsAndKnowsItsCpu) {
    fib::FiberManager manager;
    fib::FiberTls tls(manager);
    bool ran = false;
    int cpu = -1;
    fib::Fiber starter([&] {
        std::thread([&] {
            ran = true;
            cpu = sched_getcpu();
        }).join();
    });
    starter.join();
    EXPECT_TRUE(ran);
    EXPECT_GE(cpu, 0);
}

// Make the rseq system call fail with ENOSYS in this process and whatever it executes.
bool refuse_rseq() {
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
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_rseq, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    sock_fprog filter{static_cast<unsigned short>(std::size(program)), program};
    return prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 &&
           prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &filter) == 0;
}

// The same where the rseq system call fails from the start, as under the seccomp filter some
// containers install: glibc then says it has no rseq area (__rseq_size 0), and a block must
// still say "registration failed". x86-64 aborted here before the block said so whatever
// __rseq_size was. The binary runs the test above again in a child that cannot register one,
// and the child's summary must say that one test passed (an exit status of 0 alone is also
// what a run that selected no test gives).
TEST(L07_Protocols, ThreadStartedFromATlsFiberRunsWhereRseqCannotRegister) {
    SKIP_UNDER_EMULATOR("the binary cannot execute itself again there; qemu-user has no rseq, "
                        "so the test above is this one there");
    int out[2];
    ASSERT_EQ(pipe(out), 0);
    const pid_t child = fork();
    if (child == 0) {
        close(out[0]);
        if (dup2(out[1], STDOUT_FILENO) < 0 || !refuse_rseq()) _exit(3);
        // A sharded run (scripts/run-tests.sh) hands its shard down: the child would then
        // run the one test only if it fell in this shard.
        unsetenv("GTEST_TOTAL_SHARDS");
        unsetenv("GTEST_SHARD_INDEX");
        execl("/proc/self/exe", "tests", "--gtest_brief=1",
              "--gtest_filter=L07_Protocols.ThreadStartedFromATlsFiberRunsAndKnowsItsCpu",
              static_cast<char*>(nullptr));
        _exit(4);
    }
    close(out[1]);
    std::string said;
    char chunk[512];
    for (ssize_t n; (n = read(out[0], chunk, sizeof chunk)) != 0;) {
        if (n < 0 && errno == EINTR) continue;
        ASSERT_GT(n, 0) << std::strerror(errno);
        said.append(chunk, static_cast<std::size_t>(n));
    }
    close(out[0]);
    int status = 0;
    ASSERT_EQ(waitpid(child, &status, 0), child);
    ASSERT_TRUE(WIFEXITED(status)) << "the child ended by signal " << WTERMSIG(status);
    EXPECT_EQ(WEXITSTATUS(status), 0) << said;
    EXPECT_NE(said.find("[  PASSED  ] 1 test."), std::string::npos) << said;
}

#if defined(__aarch64__)

// AArch64: pthread_cancel() marks the thread's own struct pthread, which a fiber on its own block
// never reads, so usleep() alone would sleep on for ever; the fiber that resumes first from a
// switch after the cancellation stops, naming itself (thread_protocols.hpp).
void cancel_a_thread_running_a_tls_fiber() {
    std::atomic<bool> running{false};
    std::thread worker([&running] {
        fib::FiberManager manager;
        fib::FiberTls tls(manager);
        fib::Fiber sleeper({.name = "sleeper"}, [&running] {
            running = true;
            for (;;) {
                usleep(1000);
                fib::this_fiber::yield();
            }
        });
        fib::Fiber partner({.name = "partner"}, [] {
            for (;;) fib::this_fiber::yield();
        });
        sleeper.join();
    });
    while (!running) std::this_thread::yield();
    pthread_cancel(worker.native_handle());
    worker.join();
}

TEST(L07_ProtocolsDeathTest, CancellingAThreadRunningATlsFiberStopsNamingTheFiber) {
    EXPECT_DEATH(cancel_a_thread_running_a_tls_fiber(),
                 "fib: fatal: fiber [12] \\((sleeper|partner)\\) runs on a TLS block of its own, "
                 "where pthread_cancel\\(\\) of its thread cannot reach it");
}

#else

// A worker thread whose TLS fiber keeps reaching a cancellation point (usleep) is cancelled.
void cancel_a_thread_running_a_tls_fiber() {
    std::atomic<bool> running{false};
    std::thread worker([&running] {
        fib::FiberManager manager;
        fib::FiberTls tls(manager);
        fib::Fiber sleeper({.name = "sleeper"}, [&running] {
            running = true;
            for (;;) usleep(1000);
        });
        sleeper.join();
    });
    while (!running) std::this_thread::yield();
    pthread_cancel(worker.native_handle());
    worker.join();
}

TEST(L07_ProtocolsDeathTest, CancellingAThreadRunningATlsFiberStopsNamingTheFiber) {
    EXPECT_DEATH(cancel_a_thread_running_a_tls_fiber(),
                 "fib: fatal: fiber 1 \\(sleeper\\) was unwound by pthread_exit\\(\\) or "
                 "pthread_cancel\\(\\)");
}

#endif

void pthread_exit_on_a_tls_fiber() {
    fib::FiberManager manager;
    fib::FiberTls tls(manager);
    fib::Fiber quitter({.name = "quitter"}, [] { pthread_exit(nullptr); });
    quitter.join();
}

TEST(L07_ProtocolsDeathTest, PthreadExitOnATlsFiberStopsNamingTheFiber) {
    EXPECT_DEATH(pthread_exit_on_a_tls_fiber(),
                 "fib: fatal: fiber 1 \\(quitter\\) was unwound by pthread_exit\\(\\) or "
                 "pthread_cancel\\(\\)");
}

thread_local volatile sig_atomic_t signals_here = 0;

// Keeps the errno it interrupted, as a handler must; counts in the running code's thread_local.
void count_signal(int) {
    const int saved = errno;
    errno = EINTR;
    signals_here = signals_here + 1;
    errno = saved;
}

// The handler runs on the block of whatever runs when the signal lands: the fiber's own.
TEST(L07_Protocols, ASignalHandlerOnATlsFiberUsesThatFibersErrnoAndThreadLocals) {
    struct sigaction action {}, previous{};
    action.sa_handler = count_signal;
    ASSERT_EQ(sigaction(SIGUSR1, &action, &previous), 0);
    fib::FiberManager manager;
    fib::FiberTls tls(manager);
    int errno_after[2] = {}, counted[2] = {};
    fib::Fiber raiser([&] {
        errno = 1001;
        raise(SIGUSR1);
        fib::this_fiber::yield();
        errno_after[0] = errno;
        counted[0] = signals_here;
    });
    fib::Fiber spinner([&] {
        errno = 1002;
        // Signalled by another thread while it spins on this fiber.
        std::thread sender([thread = pthread_self()] { pthread_kill(thread, SIGUSR1); });
        // sched_yield() leaves errno alone, where an interrupted sleep would set EINTR.
        for (long i = 0; i < 100'000'000 && signals_here == 0; ++i) sched_yield();
        sender.join();
        errno_after[1] = errno;
        counted[1] = signals_here;
    });
    raiser.join();
    spinner.join();
    sigaction(SIGUSR1, &previous, nullptr);
    EXPECT_EQ(errno_after[0], 1001);
    EXPECT_EQ(errno_after[1], 1002);
    EXPECT_EQ(counted[0], 1);
    EXPECT_EQ(counted[1], 1);
    EXPECT_EQ(signals_here, 0);  // main's own copy
}

// pthread_create points a new thread's resolver state at its own; libc's image, which a fresh
// block starts from, points at main's. A worker thread's fibers use their thread's.
TEST(L07_Protocols, ResolverStateOfATlsFiberIsItsThreadsNotMains) {
    const res_state main_state = __res_state();
    res_state thread_state = nullptr, fiber_state = nullptr;
    std::thread([&] {
        thread_state = __res_state();
        fib::FiberManager manager;
        fib::FiberTls tls(manager);
        fib::Fiber resolver([&fiber_state] { fiber_state = __res_state(); });
        resolver.join();
    }).join();
    EXPECT_NE(thread_state, main_state);
    EXPECT_EQ(fiber_state, thread_state);
}

// Resolving on fibers of two threads at once: each call succeeds (only /etc/hosts is read).
TEST(L07_Protocols, GetaddrinfoOnTlsFibersOfTwoThreadsAtOnce) {
    std::atomic<int> resolved{0};
    auto resolve_on_fibers = [&resolved] {
        fib::FiberManager manager;
        fib::FiberTls tls(manager);
        std::vector<fib::Fiber> fibers;
        for (int i = 0; i < 3; ++i)
            fibers.emplace_back([&resolved] {
                for (int round = 0; round < 20; ++round) {
                    addrinfo hints{}, *found = nullptr;
                    hints.ai_family = AF_INET;
                    hints.ai_socktype = SOCK_STREAM;
                    if (getaddrinfo("localhost", "80", &hints, &found) == 0) {
                        ++resolved;
                        freeaddrinfo(found);
                    }
                    fib::this_fiber::yield();
                }
            });
        for (fib::Fiber& fiber : fibers) fiber.join();
    };
    std::thread first(resolve_on_fibers), second(resolve_on_fibers);
    first.join();
    second.join();
    EXPECT_EQ(resolved.load(), 2 * 3 * 20);
}

}  // namespace
