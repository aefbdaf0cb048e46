// tls_switch.hpp — lesson 7: the switch routines that load %fs/%gs, and how this machine writes those bases.
//
// Writing a segment base from user space takes one instruction (wrfsbase,
// wrgsbase) when the CPU has FSGSBASE and the kernel (Linux 5.9+) enables it,
// which it says in the aux vector: getauxval(AT_HWCAP2) & HWCAP2_FSGSBASE.
// Elsewhere the instruction raises SIGILL and arch_prctl(2) is the way, a
// system call each time. FIB_TLS_SWITCH=arch_prctl forces that fallback.
#pragma once

#include <cstdint>

#include "fib/fiber_manager.hpp"

extern "C" {
// asm/switch_context_tls.S: switch_context, after loading to->fs_base and/or to->gs_base.
void switch_context_fs(fib::Context* from, fib::Context* to, std::uintptr_t arg);
void switch_context_gs(fib::Context* from, fib::Context* to, std::uintptr_t arg);
void switch_context_fs_gs(fib::Context* from, fib::Context* to, std::uintptr_t arg);
void switch_context_fs_syscall(fib::Context* from, fib::Context* to, std::uintptr_t arg);
void switch_context_gs_syscall(fib::Context* from, fib::Context* to, std::uintptr_t arg);
void switch_context_fs_gs_syscall(fib::Context* from, fib::Context* to, std::uintptr_t arg);
}

namespace fib {

// True when wrfsbase/wrgsbase work here and FIB_TLS_SWITCH does not say
// arch_prctl. Decided once; the fallback prints a one-line notice.
bool fsgsbase_usable();

// The routine that loads the bases asked for (fs, gs or both) the fastest way
// this machine allows.
SwitchRoutine tls_switch_routine(bool load_fs, bool load_gs);

// Set the running code's %gs base (outside a switch: nothing compiled uses %gs).
void set_gs_base(const void* base);

}  // namespace fib
