// switch_context.S — lesson 1: save one context, load another (AArch64, AAPCS64).
//
//   extern "C" void switch_context(Context* from, Context* to, std::uintptr_t arg);
//                                  x0             x1           x2
//
// Contract: save the callee-saved registers x19–x28, the frame pointer x29, the
// link register x30 (where our caller resumes), sp, d8–d15 and FPCR into *from;
// load the same from *to; return through to's x30 with `arg` in x0. A context
// saved here resumes by returning from its own call to switch_context. A fresh
// context (see prepare_context) "returns" into context_trampoline instead, which
// passes x0 on to the entry function as its argument.
//
// Caller-saved registers are not saved: x0–x18, v0–v7, v16–v31, and the upper
// 64 bits of v8–v15 (AAPCS64 makes only their low halves, d8–d15, callee-saved).
// The caller already treats them as lost across any call.
//
// FPCR (rounding mode, flush-to-zero, default NaN) is callee-saved, so it is per
// context, as MXCSR and the x87 control word are on x86-64. It is written only
// when the loaded context's differs: on many cores `msr fpcr` waits for every
// floating-point instruction in flight, and most contexts share one value. FPSR
// is not saved: it holds status, the sticky exception flags, which any called
// function may set, so no caller can count on them across a call, this one
// included.
//
// BTI yes (`bti c` at the entry; gnu_property.h), pointer authentication no:
// gnu_property.h says why.
#include "fib/context_layout.h"

    .text
    .globl  switch_context
    .type   switch_context, %function
    .p2align 4
switch_context:
    .cfi_startproc
    bti     c                       // a call may come through a PLT stub (br x17)

    // 1. Save the running context into *from. x30 holds our return address;
    // loading this context again returns through it.
    stp     x19, x20, [x0, #CTX_X19]
    stp     x21, x22, [x0, #CTX_X21]
    stp     x23, x24, [x0, #CTX_X23]
    stp     x25, x26, [x0, #CTX_X25]
    stp     x27, x28, [x0, #CTX_X27]
    stp     x29, x30, [x0, #CTX_FP]
    mov     x9, sp
    str     x9, [x0, #CTX_SP]
    stp     d8, d9, [x0, #CTX_D8]
    stp     d10, d11, [x0, #CTX_D10]
    stp     d12, d13, [x0, #CTX_D12]
    stp     d14, d15, [x0, #CTX_D14]
    mrs     x10, fpcr
    str     x10, [x0, #CTX_FPCR]

    // 2. Switch stacks: from here on we run on the stack of *to. Until the `ret`,
    // no frame describes this code (x30 is not yet *to's, and a fresh context's
    // x30 is the trampoline's first instruction, not a return address), so tell
    // an unwinder that lands here, a profiler's say, that there is nothing
    // further to unwind.
    ldr     x9, [x1, #CTX_SP]
    mov     sp, x9
    .cfi_undefined x30

    // 3. Load the rest of *to, and return through its x30 with arg in x0.
    ldp     x19, x20, [x1, #CTX_X19]
    ldp     x21, x22, [x1, #CTX_X21]
    ldp     x23, x24, [x1, #CTX_X23]
    ldp     x25, x26, [x1, #CTX_X25]
    ldp     x27, x28, [x1, #CTX_X27]
    ldp     x29, x30, [x1, #CTX_FP]
    ldp     d8, d9, [x1, #CTX_D8]
    ldp     d10, d11, [x1, #CTX_D10]
    ldp     d12, d13, [x1, #CTX_D12]
    ldp     d14, d15, [x1, #CTX_D14]
    ldr     x11, [x1, #CTX_FPCR]
    cmp     x10, x11
    b.eq    .Lsame_fpcr
    msr     fpcr, x11
.Lsame_fpcr:
    mov     x0, x2
    ret
    .cfi_endproc
    .size   switch_context, .-switch_context

// No executable stack for any binary that links this file; BTI, not PAC.
    .section .note.GNU-stack, "", %progbits
#include "fib/gnu_property.h"
