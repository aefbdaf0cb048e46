// context_trampoline.S — lesson 1: the first instructions a fresh context runs (AArch64).
//
//   extern "C" void context_trampoline();   // never called; returned into
//
// Contract: prepare_context leaves the entry function in x19, x29 (fp) = 0 and a
// 16-byte aligned sp, and makes the trampoline the context's lr; switch_context
// "returns" here with `arg` in x0. We call entry(arg). A call on AArch64 pushes
// nothing (blr puts the return address in x30), so the entry function starts
// with sp % 16 == 0, exactly as the ABI promises every function. An entry
// function must never return; if it does, we stop with a clear message rather
// than run into whatever lies above the stack.
    .text
    .globl  context_trampoline
    .type   context_trampoline, %function
    .p2align 4
context_trampoline:
    .cfi_startproc
    // This is the outermost frame of the context: there is no caller to unwind
    // to. Saying so lets gdb's `bt` and C++ unwinders stop cleanly here.
    .cfi_undefined x30
    bti     c                       // an entry point, like every function's
    blr     x19                     // entry(arg): arg is already in x0
    bl      context_entry_returned  // [[noreturn]]: message and abort
    brk     #0x1
    .cfi_endproc
    .size   context_trampoline, .-context_trampoline

// No executable stack; BTI, not PAC (gnu_property.h).
    .section .note.GNU-stack, "", %progbits
#include "fib/gnu_property.h"
