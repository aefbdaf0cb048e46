// context_layout.h — lesson 1: where each saved register lives inside a Context.
//
// This file is the one source of truth for the layout. It is included by the
// assembly (switch_context.S) and by C++ (context.hpp), which proves every
// offset with static_assert(offsetof(...)). Keep it to #defines: the assembler
// understands nothing else.
#ifndef FIB_CONTEXT_LAYOUT_H
#define FIB_CONTEXT_LAYOUT_H

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

#endif
