// overflow_guard.hpp — lesson 2: turning a fiber's stack overflow into a clear message.
//
// A fiber that overflows its stack touches the guard region below it and gets
// SIGSEGV. The handler cannot run on the overflowed stack (it is full), so it
// runs on an alternate signal stack (sigaltstack). If the fault address is in
// the running fiber's guard, or the fiber's stack pointer is already below its
// stack (a frame bigger than the guard), it prints
//   fib: fatal: stack overflow in fiber 3 (parser): its stack is 65536 bytes ...
// and aborts. Any other fault is handed back to the handler that was there
// before (the default one, or a sanitizer's), so real crashes stay real.
#pragma once

#include <signal.h>

#include <cstddef>

namespace fib {

class OverflowGuard {
public:
    OverflowGuard();   // alternate stack for this thread; handler for the process
    ~OverflowGuard();  // restores this thread's previous alternate stack
    OverflowGuard(const OverflowGuard&) = delete;
    OverflowGuard& operator=(const OverflowGuard&) = delete;

private:
    void* alt_stack_ = nullptr;
    std::size_t alt_stack_size_ = 0;
    stack_t previous_{};
};

// For a fault handler that found the fault was not its own: call the handler
// that was installed before it, or, if that was the default, restore the
// default so that the faulting instruction, run again, ends the process.
void hand_on_fault(const struct sigaction& previous, int signal, siginfo_t* info, void* ucontext);

}  // namespace fib
