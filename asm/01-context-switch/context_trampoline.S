// context_trampoline.S — lesson 1: the first instructions a fresh context runs.
//
//   extern "C" void context_trampoline();   // never called; switched to
//
// Contract: prepare_context leaves the entry function in rbx, rbp = 0 and a
// 16-byte aligned rsp; switch_context jumps here with `arg` in rdi. We call
// entry(arg). The call pushes a return address, so the entry function starts
// with (rsp + 8) % 16 == 0, exactly as the ABI promises every function. An entry
// function must never return; if it does, we stop with a clear message rather
// than run into whatever lies above the stack.
    .text
    .globl  context_trampoline
    .type   context_trampoline, @function
    .p2align 4
context_trampoline:
    .cfi_startproc
    // This is the outermost frame of the context: there is no caller to unwind
    // to. Saying so lets gdb's `bt` and C++ unwinders stop cleanly here.
    .cfi_undefined rip
    endbr64                         // reached by an indirect jump
    callq   *%rbx                   // entry(arg): arg is already in rdi
    callq   context_entry_returned@PLT  // [[noreturn]]: message and abort
    ud2
    .cfi_endproc
    .size   context_trampoline, .-context_trampoline

// No executable stack; IBT, not shadow stacks (gnu_property.h).
    .section .note.GNU-stack, "", @progbits
#include "fib/gnu_property.h"
