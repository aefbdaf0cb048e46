// context.hpp — lesson 7: lesson 1's Context, plus the %fs and %gs bases a fiber runs with (AArch64: its tp and fiber_local block).
//
// Replaces lesson 1's context.hpp from stage 7 on: two fields at the end, which
// lesson 1's switch_context leaves alone and lesson 7's switch routines load.
//
// A Context is everything a paused computation needs to resume that is not on its
// own stack: the callee-saved registers, the stack pointer and the resume address.
// Caller-saved registers (rax, rcx, rdx, rsi, rdi, r8–r11, xmm0–15) are absent on
// purpose: switch_context is an ordinary function call, so the compiler already
// assumes the call destroys them and keeps nothing it needs there.
//
// On AArch64 the same holds for x0–x18, v0–v7, v16–v31 and the upper halves of
// v8–v15; its Context is the second struct below, with this lesson's two
// fields: the thread pointer and the fiber_local block.
#pragma once

#include <cstddef>
#include <cstdint>

#include "fib/context_layout.h"

namespace fib {

#if defined(__x86_64__)

struct Context {
    std::uint64_t rbx = 0;  // callee-saved
    std::uint64_t rbp = 0;  // callee-saved (frame pointer; 0 ends gdb's frame chain)
    std::uint64_t r12 = 0;  // callee-saved
    std::uint64_t r13 = 0;  // callee-saved
    std::uint64_t r14 = 0;  // callee-saved
    std::uint64_t r15 = 0;  // callee-saved
    std::uint64_t rsp = 0;  // stack pointer to resume with
    std::uint64_t rip = 0;  // address to resume at
    std::uint32_t mxcsr = 0;    // callee-saved control bits of SSE
    std::uint16_t x87_cw = 0;   // callee-saved x87 control word
    std::uint16_t padding = 0;
    std::uint64_t fs_base = 0;  // %fs base to load: its TLS block's thread pointer
    std::uint64_t gs_base = 0;  // %gs base to load: its fiber_local block
};

// The layout the assembly relies on, proved field by field.
static_assert(offsetof(Context, rbx) == CTX_RBX);
static_assert(offsetof(Context, rbp) == CTX_RBP);
static_assert(offsetof(Context, r12) == CTX_R12);
static_assert(offsetof(Context, r13) == CTX_R13);
static_assert(offsetof(Context, r14) == CTX_R14);
static_assert(offsetof(Context, r15) == CTX_R15);
static_assert(offsetof(Context, rsp) == CTX_RSP);
static_assert(offsetof(Context, rip) == CTX_RIP);
static_assert(offsetof(Context, mxcsr) == CTX_MXCSR);
static_assert(offsetof(Context, x87_cw) == CTX_X87CW);
static_assert(offsetof(Context, fs_base) == CTX_FS_BASE);
static_assert(offsetof(Context, gs_base) == CTX_GS_BASE);

#elif defined(__aarch64__)

struct Context {
    std::uint64_t x19 = 0;  // callee-saved, x19–x28
    std::uint64_t x20 = 0;
    std::uint64_t x21 = 0;
    std::uint64_t x22 = 0;
    std::uint64_t x23 = 0;
    std::uint64_t x24 = 0;
    std::uint64_t x25 = 0;
    std::uint64_t x26 = 0;
    std::uint64_t x27 = 0;
    std::uint64_t x28 = 0;
    std::uint64_t fp = 0;   // x29, callee-saved (frame pointer; 0 ends gdb's frame chain)
    std::uint64_t lr = 0;   // x30: address to resume at (switch_context returns through it)
    std::uint64_t sp = 0;   // stack pointer to resume with
    std::uint64_t d8 = 0;   // callee-saved: the low halves of v8–v15
    std::uint64_t d9 = 0;
    std::uint64_t d10 = 0;
    std::uint64_t d11 = 0;
    std::uint64_t d12 = 0;
    std::uint64_t d13 = 0;
    std::uint64_t d14 = 0;
    std::uint64_t d15 = 0;
    std::uint64_t fpcr = 0;  // callee-saved control bits: rounding, flush-to-zero, default NaN
    std::uint64_t tp = 0;      // tpidr_el0 to load: its TLS block's thread pointer
    std::uint64_t locals = 0;  // its fiber_local block (fiber_local.hpp)
};

// The layout the assembly relies on, proved field by field.
static_assert(offsetof(Context, x19) == CTX_X19);
static_assert(offsetof(Context, x20) == CTX_X20);
static_assert(offsetof(Context, x21) == CTX_X21);
static_assert(offsetof(Context, x22) == CTX_X22);
static_assert(offsetof(Context, x23) == CTX_X23);
static_assert(offsetof(Context, x24) == CTX_X24);
static_assert(offsetof(Context, x25) == CTX_X25);
static_assert(offsetof(Context, x26) == CTX_X26);
static_assert(offsetof(Context, x27) == CTX_X27);
static_assert(offsetof(Context, x28) == CTX_X28);
static_assert(offsetof(Context, fp) == CTX_FP);
static_assert(offsetof(Context, lr) == CTX_LR);
static_assert(offsetof(Context, sp) == CTX_SP);
static_assert(offsetof(Context, d8) == CTX_D8);
static_assert(offsetof(Context, d9) == CTX_D9);
static_assert(offsetof(Context, d10) == CTX_D10);
static_assert(offsetof(Context, d11) == CTX_D11);
static_assert(offsetof(Context, d12) == CTX_D12);
static_assert(offsetof(Context, d13) == CTX_D13);
static_assert(offsetof(Context, d14) == CTX_D14);
static_assert(offsetof(Context, d15) == CTX_D15);
static_assert(offsetof(Context, fpcr) == CTX_FPCR);
static_assert(offsetof(Context, tp) == CTX_TP);
static_assert(offsetof(Context, locals) == CTX_LOCALS);

#endif

// The entry function of a fresh context. It receives switch_context's `arg` and
// must never return: it ends by switching to another context for good.
using ContextEntry = void (*)(std::uintptr_t arg);

extern "C" {

// Save the running state into *from, load *to, and continue where *to left off.
// When *to is fresh (made by prepare_context), its entry function starts with
// `arg` as its first argument. Defined in asm/switch_context.S.
void switch_context(Context* from, Context* to, std::uintptr_t arg);

// Where prepare_context points a fresh context's rip (lr on AArch64). Defined in
// asm/context_trampoline.S; never called directly.
void context_trampoline();

// Called by the trampoline if an entry function returns: prints one clear
// message and aborts. Defined in src/context.cpp.
[[noreturn]] void context_entry_returned();
}

// Make `context` start `entry` at its first switch, on the stack that grows down
// from `stack_top` (rounded down to 16 bytes; the caller may keep data above it).
// The new context inherits the caller's MXCSR and x87 control word (FPCR on
// AArch64), as a new thread does.
void prepare_context(Context& context, void* stack_top, ContextEntry entry);

}  // namespace fib
