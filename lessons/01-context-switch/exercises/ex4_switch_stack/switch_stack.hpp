// switch_stack.hpp — lesson 1, exercise 4: a switch that pushes the registers, as
// Boost.Context does.
//
// switch_context stores the callee-saved registers in a Context. switch_stack pushes
// them onto the running context's own stack instead, and keeps nothing but the
// resulting rsp (in *from_rsp): a paused context is just a stack pointer. It then
// moves to_rsp into rsp, pops the other context's registers, and returns through the
// return address on that stack, with `arg` in rdi.
//
// A fresh context has never pushed anything: prepare_stack lays out on its stack
// the frame switch_stack will pop, so that the first switch "returns" into
// context_trampoline with the entry function in rbx (see context_trampoline.S).
#pragma once

#include <cstdint>

#include "fib/context.hpp"

extern "C" void switch_stack(void** from_rsp, void* to_rsp, std::uintptr_t arg);

// The rsp to pass to switch_stack to start entry(arg) on the stack ending at stack_top.
void* prepare_stack(void* stack_top, fib::ContextEntry entry);
