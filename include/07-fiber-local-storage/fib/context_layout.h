// context_layout.h — lesson 7: lesson 1's Context layout, plus the %fs and %gs base registers (AArch64: the thread pointer and the fiber_local block).
//
// Replaces lesson 1's context_layout.h from stage 7 on: the same offsets, and two
// more at the end for the switch routines of asm/07-fiber-local-storage/ (and of
// asm/07-fiber-local-storage/aarch64/ on AArch64).
//
// This file is the one source of truth for the layout, one block per architecture.
// It is included by the assembly (switch_context.S, and aarch64/switch_context.S
// on AArch64) and by C++ (context.hpp), which proves every offset with
// static_assert(offsetof(...)). Keep it to #defines: the assembler understands
// nothing else.
#ifndef FIB_CONTEXT_LAYOUT_H
#define FIB_CONTEXT_LAYOUT_H

#if defined(__x86_64__)

// The six general-purpose registers the SysV ABI makes callee-saved.
#define CTX_RBX 0x00
#define CTX_RBP 0x08
#define CTX_R12 0x10
#define CTX_R13 0x18
#define CTX_R14 0x20
#define CTX_R15 0x28

// Where the context's stack pointer was, and where it resumes.
#define CTX_RSP 0x30
#define CTX_RIP 0x38

// The floating-point control state, also callee-saved: MXCSR (SSE rounding,
// flush-to-zero, exception masks) and the x87 control word (precision, rounding).
#define CTX_MXCSR 0x40
#define CTX_X87CW 0x44

// The segment base registers: %fs points at a thread's (here: a fiber's) TLS
// block, %gs at its fiber_local block. The switch routines of this lesson load
// them; lesson 1's switch_context neither reads nor writes them.
#define CTX_FS_BASE 0x48
#define CTX_GS_BASE 0x50

#elif defined(__aarch64__)

// The ten general-purpose registers AAPCS64 makes callee-saved, x19–x28, then
// the frame pointer x29 and the link register x30 (where the context resumes:
// switch_context returns through it). The registers of each stp/ldp pair lie
// side by side.
#define CTX_X19 0x00
#define CTX_X20 0x08
#define CTX_X21 0x10
#define CTX_X22 0x18
#define CTX_X23 0x20
#define CTX_X24 0x28
#define CTX_X25 0x30
#define CTX_X26 0x38
#define CTX_X27 0x40
#define CTX_X28 0x48
#define CTX_FP 0x50
#define CTX_LR 0x58

// Where the context's stack pointer was.
#define CTX_SP 0x60

// The low 64 bits of v8–v15 (d8–d15): AAPCS64 makes only these callee-saved.
#define CTX_D8 0x68
#define CTX_D9 0x70
#define CTX_D10 0x78
#define CTX_D11 0x80
#define CTX_D12 0x88
#define CTX_D13 0x90
#define CTX_D14 0x98
#define CTX_D15 0xa0

// The floating-point control register, also callee-saved: rounding mode,
// flush-to-zero, default NaN.
#define CTX_FPCR 0xa8

// The thread pointer to load into tpidr_el0: the fiber's TLS block. Then the
// fiber's fiber_local block, which AArch64 has no spare register for: the
// switch routines store it in a thread_local (fiber_local.hpp). Lesson 1's
// switch_context neither reads nor writes them.
#define CTX_TP 0xb0
#define CTX_LOCALS 0xb8

#else
#error "fib: the context switch is written for x86-64 and AArch64 only"
#endif

#endif
