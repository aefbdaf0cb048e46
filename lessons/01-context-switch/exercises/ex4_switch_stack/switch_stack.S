// switch_stack.S — lesson 1, exercise 4: switch_stack, the registers pushed onto the stack.
//
//   extern "C" void switch_stack(void** from_rsp, void* to_rsp, std::uintptr_t arg);
//
// To do: push the callee-saved registers (rbx, rbp, r12-r15) and MXCSR and the x87
// control word, store rsp in *from_rsp (rdi), load to_rsp (rsi) into rsp, pop the
// same things in reverse order, move arg (rdx) into rdi, and return.
    .text
    .globl  switch_stack
    .type   switch_stack, @function
    .p2align 4
switch_stack:
    endbr64
    ret
    .size   switch_stack, .-switch_stack

    .section .note.GNU-stack,"",@progbits
