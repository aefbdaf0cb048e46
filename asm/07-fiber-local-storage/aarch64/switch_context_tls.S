// switch_context_tls.S — lesson 7, AArch64: switch_context that also loads the thread pointer and/or the fiber_local block.
//
//   extern "C" void switch_context_tp(Context* from, Context* to, std::uintptr_t arg);
//   extern "C" void switch_context_locals(Context* from, Context* to, std::uintptr_t arg);
//   extern "C" void switch_context_tp_locals(Context* from, Context* to, std::uintptr_t arg);
//                                   x0             x1           x2
//
// Contract: load to->tp into tpidr_el0 (the thread pointer: thread_local,
// errno, every module's TLS) and/or store to->locals into the thread_local
// fib_fiber_local_block of the block now current (fib::fiber_local), then do
// exactly what switch_context does: save *from, load *to, jump to it with
// `arg` in x0. The x86-64 file beside this one's directory does the same
// with %fs and %gs.
//
// As there, the bases of *from are not saved: a context's never change while
// it runs. No C++ code runs between the write and the stack switch, so no
// compiled function sees its thread pointer change under it (g++ keeps
// tpidr_el0 and thread_local addresses in registers across calls).
#include "fib/context_layout.h"

// msr tpidr_el0: one unprivileged instruction, on every AArch64 CPU and kernel.
// x9-x11 are caller-saved (AAPCS64's temporaries): free to use here.
.macro LOAD_TP
    ldr     x9, [x1, #CTX_TP]
    msr     tpidr_el0, x9
.endm

// AArch64 has no register to spare for the fiber_local block (fiber_local.hpp):
// its address is a thread_local, reached as initial-exec TLS: its offset from
// tp is in the GOT, filled in by the dynamic linker. Stored after LOAD_TP, in
// the block of the context being loaded.
.macro STORE_LOCALS
    adrp    x10, :gottprel:fib_fiber_local_block
    ldr     x10, [x10, #:gottprel_lo12:fib_fiber_local_block]
    mrs     x9, tpidr_el0
    ldr     x11, [x1, #CTX_LOCALS]
    str     x11, [x9, x10]
.endm
.macro NO_LOAD
.endm

// One routine: its loads, then a tail branch into lesson 1's switch_context,
// which returns straight to our caller when this context resumes. Reached by
// an indirect call (a SwitchRoutine pointer): bti c.
.macro SWITCH_ROUTINE name, load_tp, store_locals
    .text
    .globl  \name
    .type   \name, %function
    .p2align 4
\name:
    .cfi_startproc
    bti     c
    \load_tp
    \store_locals
    b       switch_context
    .cfi_endproc
    .size   \name, .-\name
.endm

SWITCH_ROUTINE switch_context_tp,        LOAD_TP, NO_LOAD
SWITCH_ROUTINE switch_context_locals,    NO_LOAD, STORE_LOCALS
SWITCH_ROUTINE switch_context_tp_locals, LOAD_TP, STORE_LOCALS

// No executable stack for any binary that links this file; BTI (gnu_property.h).
    .section .note.GNU-stack, "", %progbits
#include "fib/gnu_property.h"
