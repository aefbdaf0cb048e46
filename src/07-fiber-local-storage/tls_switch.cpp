// tls_switch.cpp — lesson 7: choosing wrfsbase/wrgsbase or arch_prctl, once (on AArch64: msr, always).
#include "fib/tls_switch.hpp"

#if defined(__aarch64__)

#include "fib/fiber_local.hpp"
#include "fib/thread_protocols.hpp"

namespace fib {
namespace {

// A fiber with a TLS block of its own resumes here, back from its switch and
// on its block: the place to see a pthread_cancel() of its thread, which
// glibc cannot show it (thread_protocols.hpp).
void switch_tp_refusing_cancel(Context* from, Context* to, std::uintptr_t arg) {
    switch_context_tp(from, to, arg);
    refuse_cancellation_on_fiber();
}

void switch_tp_locals_refusing_cancel(Context* from, Context* to, std::uintptr_t arg) {
    switch_context_tp_locals(from, to, arg);
    refuse_cancellation_on_fiber();
}

}  // namespace

SwitchRoutine tls_switch_routine(bool load_tp, bool load_locals) {
    if (load_tp && load_locals) return &switch_tp_locals_refusing_cancel;
    if (load_tp) return &switch_tp_refusing_cancel;
    if (load_locals) return &switch_context_locals;
    return &switch_context;
}

void set_gs_base(const void* base) {
    detail::fiber_local_block = static_cast<char*>(const_cast<void*>(base));
}

}  // namespace fib

#else

#include <asm/prctl.h>
#include <sys/auxv.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "fib/fatal.hpp"

namespace fib {
namespace {

constexpr unsigned long kHwcap2Fsgsbase = 1ul << 1;  // HWCAP2_FSGSBASE (asm/hwcap2.h)

bool decide_fsgsbase() {
    const bool hardware = (getauxval(AT_HWCAP2) & kHwcap2Fsgsbase) != 0;
    const char* forced = std::getenv("FIB_TLS_SWITCH");
    const bool fallback_forced = forced && std::strcmp(forced, "arch_prctl") == 0;
    if (hardware && !fallback_forced) return true;
    std::fprintf(stderr, "fib: %s: fibers switch %%fs/%%gs with arch_prctl(2), a system call per switch\n",
                 fallback_forced ? "FIB_TLS_SWITCH=arch_prctl" : "no FSGSBASE on this CPU or kernel");
    return false;
}

}  // namespace

bool fsgsbase_usable() {
    static const bool usable = decide_fsgsbase();
    return usable;
}

SwitchRoutine tls_switch_routine(bool load_fs, bool load_gs) {
    const bool insn = fsgsbase_usable();
    if (load_fs && load_gs) return insn ? &switch_context_fs_gs : &switch_context_fs_gs_syscall;
    if (load_fs) return insn ? &switch_context_fs : &switch_context_fs_syscall;
    if (load_gs) return insn ? &switch_context_gs : &switch_context_gs_syscall;
    return &switch_context;
}

void set_gs_base(const void* base) {
    if (fsgsbase_usable()) {
        asm volatile("wrgsbase %0" : : "r"(base) : "memory");
    } else if (syscall(SYS_arch_prctl, ARCH_SET_GS, base) != 0) {
        fatal("arch_prctl(ARCH_SET_GS) failed: %s", std::strerror(errno));
    }
}

}  // namespace fib

#endif
