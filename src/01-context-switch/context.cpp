// context.cpp — lesson 1: preparing a fresh context so its first switch starts a function.
#include "fib/context.hpp"

#include "fib/fatal.hpp"

namespace fib {

#if defined(__x86_64__)

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

#elif defined(__aarch64__)

void prepare_context(Context& context, void* stack_top, ContextEntry entry) {
    // AAPCS64 wants sp % 16 == 0 at every instruction, and a call pushes nothing
    // (the return address goes into lr): the entry function starts with the
    // very sp the trampoline was given, 16-byte aligned like any function's.
    const auto top = reinterpret_cast<std::uintptr_t>(stack_top) & ~std::uintptr_t{15};
    context = Context{};
    context.sp = top;
    // switch_context ends with `ret`, a jump to lr: a fresh context "returns"
    // into the trampoline's first instruction.
    context.lr = reinterpret_cast<std::uint64_t>(&context_trampoline);
    // The trampoline finds the entry function in x19 (callee-saved, so loaded by
    // switch_context). fp = 0 ends the frame-pointer chain for debuggers.
    context.x19 = reinterpret_cast<std::uint64_t>(entry);
    context.fp = 0;
    // Start with the creator's floating-point control state, as a new thread would.
    asm volatile("mrs %0, fpcr" : "=r"(context.fpcr));
}

#endif

}  // namespace fib

extern "C" void context_entry_returned() {
    fib::fatal("a context's entry function returned; it must switch to another context instead");
}
