// switch_context.S — lesson 1: save one context, load another (System V x86-64).
//
//   extern "C" void switch_context(Context* from, Context* to, std::uintptr_t arg);
//                                  rdi            rsi          rdx
//
// Contract: save the callee-saved registers, the stack pointer, a resume address,
// MXCSR and the x87 control word into *from; load the same from *to; jump to
// to->rip with `arg` in rdi. A context saved here resumes by returning from its
// own call to switch_context. A fresh context (see prepare_context) starts in
// context_trampoline, which passes rdi on to the entry function as its argument.
//
// Caller-saved registers are not saved: the caller already treats them as lost
// across any call. The red zone below rsp is dead across a call, too.
//
// CET: IBT yes (endbr64 at both entry points; gnu_property.h says so), shadow
// stacks no: a context resumes with a `ret` to a return address on its own
// stack, which the shadow stack of the thread does not hold.
#include "fib/context_layout.h"

    .text
    .globl  switch_context
    .type   switch_context, @function
    .p2align 4
switch_context:
    .cfi_startproc
    endbr64

    // 1. Save the running context into *from. rsp still points at our return
    // address; .Lresume returns through it when this context is loaded again.
    movq    %rbx, CTX_RBX(%rdi)
    movq    %rbp, CTX_RBP(%rdi)
    movq    %r12, CTX_R12(%rdi)
    movq    %r13, CTX_R13(%rdi)
    movq    %r14, CTX_R14(%rdi)
    movq    %r15, CTX_R15(%rdi)
    movq    %rsp, CTX_RSP(%rdi)
    leaq    .Lresume(%rip), %rax
    movq    %rax, CTX_RIP(%rdi)
    stmxcsr CTX_MXCSR(%rdi)
    fnstcw  CTX_X87CW(%rdi)

    // 2. Switch stacks: from here on we run on the stack of *to. Until the jump,
    // no frame below us describes this code (a fresh context's stack holds no
    // return address at all), so tell an unwinder that lands here, a profiler's
    // say, that there is nothing further to unwind.
    movq    CTX_RSP(%rsi), %rsp
    .cfi_undefined rip

    // 3. Load the rest of *to and jump to where it resumes, arg in rdi.
    movq    CTX_RBX(%rsi), %rbx
    movq    CTX_RBP(%rsi), %rbp
    movq    CTX_R12(%rsi), %r12
    movq    CTX_R13(%rsi), %r13
    movq    CTX_R14(%rsi), %r14
    movq    CTX_R15(%rsi), %r15
    ldmxcsr CTX_MXCSR(%rsi)
    fldcw   CTX_X87CW(%rsi)
    movq    %rdx, %rdi
    jmpq    *CTX_RIP(%rsi)

    // A saved context resumes here, by an indirect jump (hence endbr64), and
    // returns to whoever called switch_context on its behalf long ago.
.Lresume:
    .cfi_restore rip                // the caller's return address, at rsp again
    endbr64
    ret
    .cfi_endproc
    .size   switch_context, .-switch_context

// No executable stack for any binary that links this file; IBT, not shadow stacks.
    .section .note.GNU-stack, "", @progbits
#include "fib/gnu_property.h"
