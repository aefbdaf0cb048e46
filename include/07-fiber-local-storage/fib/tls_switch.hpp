// tls_switch.hpp — lesson 7: the switch routines that load %fs/%gs, and how this machine writes those bases.
//
// Writing a segment base from user space takes one instruction (wrfsbase,
// wrgsbase) when the CPU has FSGSBASE and the kernel (Linux 5.9+) enables it,
// which it says in the aux vector: getauxval(AT_HWCAP2) & HWCAP2_FSGSBASE.
// Elsewhere the instruction raises SIGILL and arch_prctl(2) is the way, a
// system call each time. FIB_TLS_SWITCH=arch_prctl forces that fallback.
//
// On AArch64 the thread pointer is tpidr_el0, which user code writes with one
// instruction (msr) on every CPU and kernel: no fallback, no choice to make.
#pragma once

#include <cstdint>

#include "fib/fiber_manager.hpp"

#if defined(__aarch64__)

extern "C" {
// asm/07-fiber-local-storage/aarch64/switch_context_tls.S: switch_context,
// after loading to->tp into tpidr_el0 and/or storing to->locals where
// fiber_local finds it.
void switch_context_tp(fib::Context* from, fib::Context* to, std::uintptr_t arg);
void switch_context_locals(fib::Context* from, fib::Context* to, std::uintptr_t arg);
void switch_context_tp_locals(fib::Context* from, fib::Context* to, std::uintptr_t arg);
}

namespace fib {

// The Context fields the switch routines load: a fiber's TLS block, and its
// fiber_local block.
inline std::uint64_t& tls_base(Context& context) { return context.tp; }
inline std::uint64_t& locals_base(Context& context) { return context.locals; }

// The routine that loads what is asked for: the thread pointer, the
// fiber_local block or both.
SwitchRoutine tls_switch_routine(bool load_tp, bool load_locals);

// Set the running code's fiber_local block (fiber_local.hpp).
void set_gs_base(const void* base);

}  // namespace fib

#else

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

// The Context fields the switch routines load.
inline std::uint64_t& tls_base(Context& context) { return context.fs_base; }
inline std::uint64_t& locals_base(Context& context) { return context.gs_base; }

// True when wrfsbase/wrgsbase work here and FIB_TLS_SWITCH does not say
// arch_prctl. Decided once; the fallback prints a one-line notice.
bool fsgsbase_usable();

// The routine that loads the bases asked for (fs, gs or both) the fastest way
// this machine allows.
SwitchRoutine tls_switch_routine(bool load_fs, bool load_gs);

// Set the running code's %gs base (outside a switch: nothing compiled uses %gs).
void set_gs_base(const void* base);

}  // namespace fib

#endif
