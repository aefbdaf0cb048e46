// context.cpp — lesson 1: preparing a fresh context so its first switch starts a function.
#include "fib/context.hpp"

#include "fib/fatal.hpp"

namespace fib {

void prepare_context(Context& context, void* stack_top, ContextEntry entry) {
    // The ABI wants rsp % 16 == 0 just before a call. The trampoline's call then
    // pushes 8 bytes, so entry starts with (rsp + 8) % 16 == 0 like any function.
    const auto top = reinterpret_cast<std::uintptr_t>(stack_top) & ~std::uintptr_t{15};
    context = Context{};
    context.rsp = top;
    context.rip = reinterpret_cast<std::uint64_t>(&context_trampoline);
    // The trampoline finds the entry function in rbx (callee-saved, so loaded by
    // switch_context). rbp = 0 ends the frame-pointer chain for debuggers.
    context.rbx = reinterpret_cast<std::uint64_t>(entry);
    context.rbp = 0;
    // Start with the creator's floating-point control state, as a new thread would.
    context.mxcsr = __builtin_ia32_stmxcsr();
    asm volatile("fnstcw %0" : "=m"(context.x87_cw));
}

}  // namespace fib

extern "C" void context_entry_returned() {
    fib::fatal("a context's entry function returned; it must switch to another context instead");
}
