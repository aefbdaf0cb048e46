// thread_protocols.cpp — lesson 7: leaving single-threaded mode for good, and running glibc's setxid handler on the thread's block.
#include "fib/thread_protocols.hpp"

#include <asm/prctl.h>
#include <pthread.h>
#include <sys/single_threaded.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <mutex>

#include "fib/fatal.hpp"
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
// THREAD_SELF says, into the thread's struct pthread; the running block's copy
// (which mutexes read) still holds the parent's until this runs in the child.
void set_running_blocks_tid() {
    const pid_t tid = gettid();
    std::memcpy(reinterpret_cast<char*>(thread_pointer()) + _thread_db_pthread_tid[2], &tid,
                sizeof tid);
}

}  // namespace

void prepare_thread_protocols() {
    static std::once_flag prepared;
    std::call_once(prepared, [] {
        fsgsbase_usable();  // decided now, not first inside the signal handler
        leave_single_threaded_mode();
        wrap_setxid_handler();
        pthread_atfork(nullptr, nullptr, &set_running_blocks_tid);
    });
}

}  // namespace fib
