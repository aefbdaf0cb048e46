// prepare_stack.cpp — lesson 1, exercise 4: the frame a fresh context's first switch pops.
//
// To do: below stack_top (rounded down to 16), write what switch_stack pops, in the
// order it pops it, ending with the return address: context_trampoline. rbx holds
// the entry function; rbp 0; MXCSR and the x87 control word the caller's own. The
// trampoline calls entry at once, so rsp must be a multiple of 16 when it starts.
#include "switch_stack.hpp"

void* prepare_stack(void* stack_top, fib::ContextEntry) { return stack_top; }
