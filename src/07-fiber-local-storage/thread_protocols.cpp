// thread_protocols.cpp — lesson 7: leaving single-threaded mode for good, and running glibc's setxid handler on the thread's block.
#include "fib/thread_protocols.hpp"

#if defined(__x86_64__)
#include <asm/prctl.h>
#endif
#include <pthread.h>
#include <sys/single_threaded.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <mutex>

#include "fib/fatal.hpp"
#include "fib/fiber_manager.hpp"
#include "fib/glibc_tls.hpp"
#include "fib/tls_switch.hpp"

namespace fib {
namespace {

// glibc keeps the first two real-time signals for itself and tells programs
// that SIGRTMIN is 34: SIGCANCEL is 32, SIGSETXID 33. Its sigaction() refuses
// both, so they are read and set with the system call.
constexpr int kSigSetxid = 33;

// The kernel's struct sigaction for rt_sigaction(2) on x86-64.
struct KernelSigaction {
    void (*handler)(int, siginfo_t*, void*);
    unsigned long flags;
    void (*restorer)();
    std::uint64_t mask;
};

KernelSigaction glibc_setxid;

#if defined(__aarch64__)

// On a fiber block, TcbHead::thread (glibc's unused `private` word) is the
// thread's own tp; on a thread's own block it is null. glibc's handler runs
// on the thread's block, where THREAD_SELF is the descriptor the caller
// marked, and the fiber's is put back before the interrupted code resumes
// (the kernel keeps tpidr_el0 across a signal, as the code left it). Every
// signal is blocked meanwhile, as on x86-64.
__attribute__((no_sanitize("address", "undefined"))) void run_on_threads_block(int signal,
                                                                               siginfo_t* info,
                                                                               void* ucontext) {
    TcbHead* block = thread_pointer();
    void* thread = block->thread;
    if (thread) asm volatile("msr tpidr_el0, %0" : : "r"(thread) : "memory");
    glibc_setxid.handler(signal, info, ucontext);
    if (thread) asm volatile("msr tpidr_el0, %0" : : "r"(block) : "memory");
}

#else

void set_fs_base(void* base) {
    if (fsgsbase_usable())
        asm volatile("wrfsbase %0" : : "r"(base) : "memory");
    else
        syscall(SYS_arch_prctl, ARCH_SET_FS, base);
}

// On a fiber block, tcb (%fs:0) is the block and self (%fs:0x10) the thread;
// on a thread's own block both are the thread. glibc's handler runs on the
// thread's block, and the fiber's is put back before the interrupted code
// resumes (the kernel saves no segment base in the signal frame). Every
// signal is blocked meanwhile: a program's handler arriving now would see the
// thread's TLS instead of the fiber's. Not instrumented: the sanitizers keep
// per-thread state in TLS, which is not the running code's here.
__attribute__((no_sanitize("address", "undefined"))) void run_on_threads_block(int signal,
                                                                               siginfo_t* info,
                                                                               void* ucontext) {
    void* block;
    void* thread;
    asm volatile("movq %%fs:0, %0" : "=r"(block));
    asm volatile("movq %%fs:0x10, %0" : "=r"(thread));
    if (block != thread) set_fs_base(thread);
    glibc_setxid.handler(signal, info, ucontext);
    if (block != thread) set_fs_base(block);
}

#endif

void wrap_setxid_handler() {
    KernelSigaction wrapped;
    if (syscall(SYS_rt_sigaction, kSigSetxid, nullptr, &glibc_setxid, sizeof glibc_setxid.mask) != 0)
        fatal("rt_sigaction cannot read glibc's SIGSETXID handler");
    // late_init installed it as the first thread was created (below).
    if (glibc_setxid.handler == nullptr) fatal("glibc has no SIGSETXID handler in a threaded process");
    wrapped = glibc_setxid;
    wrapped.handler = &run_on_threads_block;
    wrapped.mask = ~std::uint64_t{0};
    if (syscall(SYS_rt_sigaction, kSigSetxid, &wrapped, nullptr, sizeof wrapped.mask) != 0)
        fatal("rt_sigaction cannot wrap glibc's SIGSETXID handler");
}

void* do_nothing(void*) { return nullptr; }

// glibc's first pthread_create runs its one-time set-up (late_init, which
// installs the SIGSETXID handler) and sets multiple_threads in the creating
// block: here, the thread's own. A no-op thread suffices; its body does not
// malloc, so it makes no arena.
void leave_single_threaded_mode() {
    if (!__libc_single_threaded) return;
    pthread_t nobody;
    if (int error = pthread_create(&nobody, nullptr, &do_nothing, nullptr))
        fatal("cannot start a thread to leave single-threaded mode: %s", std::strerror(error));
    pthread_join(nobody, nullptr);
}

// A fork from a fiber: the kernel writes the child's thread id where
// THREAD_SELF says, on x86-64 into the thread's struct pthread; the running
// block's copy (which mutexes read) still holds the parent's until this runs
// in the child.
void set_running_blocks_tid() {
    const pid_t tid = gettid();
    std::memcpy(descriptor_of(thread_pointer()) + _thread_db_pthread_tid[2], &tid, sizeof tid);
#if defined(__aarch64__)
    // On AArch64 THREAD_SELF is the block, so the kernel wrote the block's
    // copy; the thread's own, which main reads back on its block, is stale.
    if (const auto* thread = static_cast<const TcbHead*>(thread_pointer()->thread))
        std::memcpy(descriptor_of(thread) + _thread_db_pthread_tid[2], &tid, sizeof tid);
#endif
}

}  // namespace

#if defined(__aarch64__)
// glibc's CANCELED_BITMASK: pthread_cancel() sets it in the target's
// cancelhandling (with CANCELING, 1 << 2).
constexpr int kCanceledBit = 1 << 3;

void refuse_cancellation_on_fiber() {
    const auto* thread = static_cast<const TcbHead*>(thread_pointer()->thread);
    if (thread == nullptr) return;  // the thread's own block: glibc's business
    int cancelhandling;
    std::memcpy(&cancelhandling, descriptor_of(thread) + _thread_db_pthread_cancelhandling[2],
                sizeof cancelhandling);
    if ((cancelhandling & kCanceledBit) == 0) return;
    FiberManager* manager = FiberManager::current();
    fatal("%s runs on a TLS block of its own, where pthread_cancel() of its thread cannot reach "
          "it: cancelling a thread would end it with every fiber on it; end its fibers first",
          manager ? label(*manager->running()).text : "a fiber");
}
#endif

void prepare_thread_protocols() {
    static std::once_flag prepared;
    std::call_once(prepared, [] {
#if !defined(__aarch64__)
        fsgsbase_usable();  // decided now, not first inside the signal handler
#endif
        leave_single_threaded_mode();
        wrap_setxid_handler();
        pthread_atfork(nullptr, nullptr, &set_running_blocks_tid);
    });
}

}  // namespace fib
