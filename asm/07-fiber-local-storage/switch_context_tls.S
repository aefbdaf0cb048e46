// switch_context_tls.S — lesson 7: switch_context that also loads the %fs and/or %gs base.
//
//   extern "C" void switch_context_fs(Context* from, Context* to, std::uintptr_t arg);
//   extern "C" void switch_context_gs(Context* from, Context* to, std::uintptr_t arg);
//   extern "C" void switch_context_fs_gs(Context* from, Context* to, std::uintptr_t arg);
//   extern "C" void switch_context_fs_syscall(...);     // the same three, for CPUs or
//   extern "C" void switch_context_gs_syscall(...);     // kernels without FSGSBASE:
//   extern "C" void switch_context_fs_gs_syscall(...);  // arch_prctl(2) instead
//                                  rdi            rsi          rdx
//
// Contract: load to->fs_base into the %fs base (thread pointer: thread_local,
// errno, the stack-protector canary) and/or to->gs_base into the %gs base
// (fib::fiber_local), then do exactly what switch_context does: save *from,
// load *to, jump to it with `arg` in rdi.
//
// The bases of *from are not saved: a context's bases never change while it
// runs (only these routines write them), so each Context keeps the values it
// was given when it was made. No C++ code runs between the base write and the
// stack switch, so no compiled function ever sees its thread pointer change
// under it (g++ caches &errno and thread_local addresses across calls).
#include "fib/context_layout.h"

// wrfsbase/wrgsbase: one unprivileged instruction each, where the CPU has
// FSGSBASE and Linux 5.9+ lets user space use it (make bench-lesson7's
// switch_fs and switch_gs rows say what it costs).
.macro LOAD_FS_INSN
    movq    CTX_FS_BASE(%rsi), %rax
    wrfsbase %rax
.endm
.macro LOAD_GS_INSN
    movq    CTX_GS_BASE(%rsi), %rax
    wrgsbase %rax
.endm

// arch_prctl(code, base): a system call (the switch_arch_prctl row). It
// clobbers rax, rcx and r11 (caller-saved, as for any call), and needs
// rdi/rsi, so keep our three arguments on the stack around it.
#define SYS_arch_prctl 158
#define ARCH_SET_GS 0x1001
#define ARCH_SET_FS 0x1002
.macro ARCH_PRCTL field, code
    pushq   %rdi
    pushq   %rsi
    pushq   %rdx
    .cfi_adjust_cfa_offset 24
    movq    \field(%rsi), %rsi
    movl    $\code, %edi
    movl    $SYS_arch_prctl, %eax
    syscall
    popq    %rdx
    popq    %rsi
    popq    %rdi
    .cfi_adjust_cfa_offset -24
.endm
.macro LOAD_FS_SYSCALL
    ARCH_PRCTL CTX_FS_BASE, ARCH_SET_FS
.endm
.macro LOAD_GS_SYSCALL
    ARCH_PRCTL CTX_GS_BASE, ARCH_SET_GS
.endm
.macro NO_LOAD
.endm

// One routine: its loads, then a tail jump into lesson 1's switch_context,
// which returns straight to our caller when this context resumes.
.macro SWITCH_ROUTINE name, load_fs, load_gs
    .text
    .globl  \name
    .type   \name, @function
    .p2align 4
\name:
    .cfi_startproc
    endbr64
    \load_fs
    \load_gs
    jmp     switch_context@PLT
    .cfi_endproc
    .size   \name, .-\name
.endm

SWITCH_ROUTINE switch_context_fs,            LOAD_FS_INSN,    NO_LOAD
SWITCH_ROUTINE switch_context_gs,            NO_LOAD,         LOAD_GS_INSN
SWITCH_ROUTINE switch_context_fs_gs,         LOAD_FS_INSN,    LOAD_GS_INSN
SWITCH_ROUTINE switch_context_fs_syscall,    LOAD_FS_SYSCALL, NO_LOAD
SWITCH_ROUTINE switch_context_gs_syscall,    NO_LOAD,         LOAD_GS_SYSCALL
SWITCH_ROUTINE switch_context_fs_gs_syscall, LOAD_FS_SYSCALL, LOAD_GS_SYSCALL

// No executable stack for any binary that links this file; IBT, not shadow stacks.
    .section .note.GNU-stack, "", @progbits
#include "fib/gnu_property.h"
