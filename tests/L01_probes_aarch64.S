// L01_probes_aarch64.S — lesson 1 tests: probes for what C++ cannot see or choose (AArch64).
//
// C++ cannot decide what x19–x29 and d8–d15 hold across a call, nor read sp at a
// function's first instruction. These two routines can, for the tests in
// tests/L01_switch_test.cpp; tests/L01_probes.S has the same two for x86-64.
// Each obeys AAPCS64 itself.
#include "fib/context_layout.h"

    .text

// extern "C" void probe_switch_holding(Context* self, Context* other, std::uintptr_t arg,
//                                      const Context* load, Context* seen);
//                                      x0: self, x1: other, x2: arg, x3: load, x4: seen
//
// Contract: load x19–x28, x29 (fp) and d8–d15 from the same fields of *load, then
// call switch_context(self, other, arg). When this context is resumed, store those
// nineteen registers exactly as the switch handed them back into the same fields of
// *seen, restore the caller's own values and return. Only those nineteen fields of
// *seen are written. Offsets come from context_layout.h, as in switch_context.S.
    .globl  probe_switch_holding
    .type   probe_switch_holding, %function
    .p2align 4
probe_switch_holding:
    .cfi_startproc
    bti     c

    // 1. Save the caller's callee-saved registers, our return address, and
    // `seen`, which lives in a caller-saved register that the call below may
    // destroy: 22 slots of 8 bytes, 176 with sp kept 16-byte aligned.
    stp     x29, x30, [sp, #-176]!
    .cfi_def_cfa_offset 176
    .cfi_offset x29, -176
    .cfi_offset x30, -168
    stp     x19, x20, [sp, #16]
    .cfi_offset x19, -160
    .cfi_offset x20, -152
    stp     x21, x22, [sp, #32]
    .cfi_offset x21, -144
    .cfi_offset x22, -136
    stp     x23, x24, [sp, #48]
    .cfi_offset x23, -128
    .cfi_offset x24, -120
    stp     x25, x26, [sp, #64]
    .cfi_offset x25, -112
    .cfi_offset x26, -104
    stp     x27, x28, [sp, #80]
    .cfi_offset x27, -96
    .cfi_offset x28, -88
    stp     d8, d9, [sp, #96]
    .cfi_offset d8, -80
    .cfi_offset d9, -72
    stp     d10, d11, [sp, #112]
    .cfi_offset d10, -64
    .cfi_offset d11, -56
    stp     d12, d13, [sp, #128]
    .cfi_offset d12, -48
    .cfi_offset d13, -40
    stp     d14, d15, [sp, #144]
    .cfi_offset d14, -32
    .cfi_offset d15, -24
    str     x4, [sp, #160]

    // 2. Hold the chosen values across the switch; x0, x1, x2 pass through.
    ldp     x19, x20, [x3, #CTX_X19]
    ldp     x21, x22, [x3, #CTX_X21]
    ldp     x23, x24, [x3, #CTX_X23]
    ldp     x25, x26, [x3, #CTX_X25]
    ldp     x27, x28, [x3, #CTX_X27]
    ldr     x29, [x3, #CTX_FP]
    ldp     d8, d9, [x3, #CTX_D8]
    ldp     d10, d11, [x3, #CTX_D10]
    ldp     d12, d13, [x3, #CTX_D12]
    ldp     d14, d15, [x3, #CTX_D14]
    bl      switch_context

    // 3. Resumed: record what the switch restored, before anything touches it.
    ldr     x4, [sp, #160]
    stp     x19, x20, [x4, #CTX_X19]
    stp     x21, x22, [x4, #CTX_X21]
    stp     x23, x24, [x4, #CTX_X23]
    stp     x25, x26, [x4, #CTX_X25]
    stp     x27, x28, [x4, #CTX_X27]
    str     x29, [x4, #CTX_FP]
    stp     d8, d9, [x4, #CTX_D8]
    stp     d10, d11, [x4, #CTX_D10]
    stp     d12, d13, [x4, #CTX_D12]
    stp     d14, d15, [x4, #CTX_D14]

    // 4. Give the caller back its own registers.
    ldp     d14, d15, [sp, #144]
    ldp     d12, d13, [sp, #128]
    ldp     d10, d11, [sp, #112]
    ldp     d8, d9, [sp, #96]
    ldp     x27, x28, [sp, #80]
    ldp     x25, x26, [sp, #64]
    ldp     x23, x24, [sp, #48]
    ldp     x21, x22, [sp, #32]
    ldp     x19, x20, [sp, #16]
    ldp     x29, x30, [sp], #176
    .cfi_def_cfa_offset 0
    .cfi_restore x29
    .cfi_restore x30
    .cfi_restore x19
    .cfi_restore x20
    .cfi_restore x21
    .cfi_restore x22
    .cfi_restore x23
    .cfi_restore x24
    .cfi_restore x25
    .cfi_restore x26
    .cfi_restore x27
    .cfi_restore x28
    .cfi_restore d8
    .cfi_restore d9
    .cfi_restore d10
    .cfi_restore d11
    .cfi_restore d12
    .cfi_restore d13
    .cfi_restore d14
    .cfi_restore d15
    ret
    .cfi_endproc
    .size   probe_switch_holding, .-probe_switch_holding

// extern "C" void probe_entry_passing_sp(std::uintptr_t arg);   // a ContextEntry
//
// Contract: an entry function for prepare_context. It passes sp as it was at its
// first instruction (bti does not move sp) to
//   extern "C" void probe_entry_continue(std::uintptr_t arg, std::uintptr_t entry_sp);
// with `arg` untouched in x0. probe_entry_continue must never return. An sp that
// is not 16-byte aligned faults at the first store through it (Linux turns on
// the stack alignment check), so the test sees a misaligned one as a crash.
    .globl  probe_entry_passing_sp
    .type   probe_entry_passing_sp, %function
    .p2align 4
probe_entry_passing_sp:
    .cfi_startproc
    bti     c                       // reached by the trampoline's blr
    mov     x1, sp
    // A frame record keeps the frame describable to unwinders across the call.
    stp     x29, x30, [sp, #-16]!
    .cfi_def_cfa_offset 16
    .cfi_offset x29, -16
    .cfi_offset x30, -8
    mov     x29, sp
    bl      probe_entry_continue
    brk     #0x1                    // probe_entry_continue never returns
    .cfi_endproc
    .size   probe_entry_passing_sp, .-probe_entry_passing_sp

// No executable stack for the test binary; BTI, not PAC (gnu_property.h).
    .section .note.GNU-stack, "", %progbits
#include "fib/gnu_property.h"
