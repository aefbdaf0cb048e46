// L01_probes.S — lesson 1 tests: probes for what C++ cannot see or choose.
//
// C++ cannot decide what rbx, rbp and r12–r15 hold across a call, nor read rsp at
// a function's first instruction. These two routines can, for the tests in
// tests/L01_switch_test.cpp. Each obeys the System V ABI itself.
#include "fib/context_layout.h"

    .text

// extern "C" void probe_switch_holding(Context* self, Context* other, std::uintptr_t arg,
//                                      const Context* load, Context* seen);
//                                      rdi: self, rsi: other, rdx: arg, rcx: load, r8: seen
//
// Contract: load rbx, rbp, r12–r15 from the same fields of *load, then call
// switch_context(self, other, arg). When this context is resumed, store the six
// registers exactly as the switch handed them back into the same fields of *seen,
// restore the caller's own values and return. Only those six fields of *seen are
// written. Offsets come from context_layout.h, as in switch_context.S.
    .globl  probe_switch_holding
    .type   probe_switch_holding, @function
    .p2align 4
probe_switch_holding:
    .cfi_startproc
    endbr64

    // 1. Save the caller's callee-saved registers, and `seen`, which lives in a
    // caller-saved register that the call below may destroy. Seven pushes bring
    // rsp from 8 (mod 16) at entry to 0 (mod 16), as the call requires.
    pushq   %rbx
    .cfi_adjust_cfa_offset 8
    .cfi_rel_offset rbx, 0
    pushq   %rbp
    .cfi_adjust_cfa_offset 8
    .cfi_rel_offset rbp, 0
    pushq   %r12
    .cfi_adjust_cfa_offset 8
    .cfi_rel_offset r12, 0
    pushq   %r13
    .cfi_adjust_cfa_offset 8
    .cfi_rel_offset r13, 0
    pushq   %r14
    .cfi_adjust_cfa_offset 8
    .cfi_rel_offset r14, 0
    pushq   %r15
    .cfi_adjust_cfa_offset 8
    .cfi_rel_offset r15, 0
    pushq   %r8
    .cfi_adjust_cfa_offset 8

    // 2. Hold the chosen values across the switch; rdi, rsi, rdx pass through.
    movq    CTX_RBX(%rcx), %rbx
    movq    CTX_RBP(%rcx), %rbp
    movq    CTX_R12(%rcx), %r12
    movq    CTX_R13(%rcx), %r13
    movq    CTX_R14(%rcx), %r14
    movq    CTX_R15(%rcx), %r15
    call    switch_context@PLT

    // 3. Resumed: record what the switch restored, before anything touches it.
    popq    %r8
    .cfi_adjust_cfa_offset -8
    movq    %rbx, CTX_RBX(%r8)
    movq    %rbp, CTX_RBP(%r8)
    movq    %r12, CTX_R12(%r8)
    movq    %r13, CTX_R13(%r8)
    movq    %r14, CTX_R14(%r8)
    movq    %r15, CTX_R15(%r8)

    // 4. Give the caller back its own registers.
    popq    %r15
    .cfi_adjust_cfa_offset -8
    .cfi_restore r15
    popq    %r14
    .cfi_adjust_cfa_offset -8
    .cfi_restore r14
    popq    %r13
    .cfi_adjust_cfa_offset -8
    .cfi_restore r13
    popq    %r12
    .cfi_adjust_cfa_offset -8
    .cfi_restore r12
    popq    %rbp
    .cfi_adjust_cfa_offset -8
    .cfi_restore rbp
    popq    %rbx
    .cfi_adjust_cfa_offset -8
    .cfi_restore rbx
    ret
    .cfi_endproc
    .size   probe_switch_holding, .-probe_switch_holding

// extern "C" void probe_entry_passing_rsp(std::uintptr_t arg);   // a ContextEntry
//
// Contract: an entry function for prepare_context. It passes rsp as it was at its
// first instruction (endbr64 does not move rsp) to
//   extern "C" void probe_entry_continue(std::uintptr_t arg, std::uintptr_t entry_rsp);
// with `arg` untouched in rdi. probe_entry_continue must never return. Whatever
// rsp we were given, it is realigned before the call, so that a wrong one is
// reported by the test rather than crashing the C++ that runs next.
    .globl  probe_entry_passing_rsp
    .type   probe_entry_passing_rsp, @function
    .p2align 4
probe_entry_passing_rsp:
    .cfi_startproc
    endbr64                         // reached by the trampoline's indirect call
    movq    %rsp, %rsi
    // A frame pointer keeps the frame describable to unwinders across the realignment.
    pushq   %rbp
    .cfi_adjust_cfa_offset 8
    .cfi_rel_offset rbp, 0
    movq    %rsp, %rbp
    .cfi_def_cfa_register rbp
    andq    $-16, %rsp
    call    probe_entry_continue@PLT
    ud2                             // probe_entry_continue never returns
    .cfi_endproc
    .size   probe_entry_passing_rsp, .-probe_entry_passing_rsp

// No executable stack for the test binary; IBT, not shadow stacks (gnu_property.h).
    .section .note.GNU-stack, "", @progbits
#include "fib/gnu_property.h"
