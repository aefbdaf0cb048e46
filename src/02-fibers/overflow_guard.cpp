// overflow_guard.cpp — lesson 2: the SIGSEGV handler that names the overflowing fiber.
#include "fib/overflow_guard.hpp"

#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include <cerrno>
#include <cinttypes>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "fib/fatal.hpp"
#include "fib/fiber_manager.hpp"

namespace fib {
namespace {

struct sigaction previous_segv;

// A signal handler may only call async-signal-safe functions: no printf, no
// malloc. So the message is assembled by hand in a buffer and written with write(2).
struct Message {
    char text[256];
    std::size_t length = 0;

    void add(const char* s) {
        while (*s && length < sizeof text - 1) text[length++] = *s++;
    }
    void add_number(std::uint64_t value, unsigned base) {
        char digits[24];
        int count = 0;
        do {
            digits[count++] = "0123456789abcdef"[value % base];
            value /= base;
        } while (value != 0);
        while (count > 0 && length < sizeof text - 1) text[length++] = digits[--count];
    }
};

// The stack pointer at the fault, from the registers the kernel saved for the
// handler: each architecture keeps it in a field of its own.
std::uintptr_t stack_pointer_at_fault(void* ucontext) {
    const mcontext_t& registers = static_cast<ucontext_t*>(ucontext)->uc_mcontext;
#if defined(__x86_64__)
    return static_cast<std::uintptr_t>(registers.gregs[REG_RSP]);
#elif defined(__aarch64__)
    return static_cast<std::uintptr_t>(registers.sp);
#endif
}

// An overflow shows as an access inside the stack's guard region, or, after
// a frame bigger than the guard, as a fault with the stack pointer already
// below the stack's bottom: either way the fiber ran out of stack.
bool overflowed(const Stack& stack, const void* address, void* ucontext) {
    if (stack.guard_contains(address)) return true;
    const auto rsp = stack_pointer_at_fault(ucontext);
    const auto bottom = reinterpret_cast<std::uintptr_t>(stack.bottom());
    return stack && rsp < bottom;
}

void on_segv(int signal, siginfo_t* info, void* ucontext) {
    FiberManager* manager = FiberManager::current();
    const FiberRecord* fiber = manager ? manager->running() : nullptr;
    if (fiber && overflowed(fiber->stack, info->si_addr, ucontext)) {
        Message message;
        message.add("fib: fatal: stack overflow in fiber ");
        message.add_number(fiber->id, 10);
        if (fiber->name[0]) {
            message.add(" (");
            message.add(fiber->name);
            message.add(")");
        }
        message.add(": its stack is ");
        message.add_number(fiber->stack.size(), 10);
        message.add(" bytes; the access at 0x");
        message.add_number(reinterpret_cast<std::uintptr_t>(info->si_addr), 16);
        message.add(fiber->stack.guard_contains(info->si_addr) ? " hit the guard below it\n"
                                                               : " was made below it\n");
        [[maybe_unused]] ssize_t written = write(STDERR_FILENO, message.text, message.length);
        std::abort();
    }
    // Not a fiber's overflow: hand the signal to whoever handled it before us.
    hand_on_fault(previous_segv, signal, info, ucontext);
}

}  // namespace

void hand_on_fault(const struct sigaction& previous, int signal, siginfo_t* info, void* ucontext) {
    if (previous.sa_flags & SA_SIGINFO) {
        if (previous.sa_sigaction) return previous.sa_sigaction(signal, info, ucontext);
    } else if (previous.sa_handler != SIG_DFL && previous.sa_handler != SIG_IGN) {
        return previous.sa_handler(signal);
    }
    // The default action: restore it and return; the faulting instruction runs
    // again and the kernel ends the process with the signal as usual.
    struct sigaction default_action {};
    default_action.sa_handler = SIG_DFL;
    sigaction(signal, &default_action, nullptr);
}

OverflowGuard::OverflowGuard() {
    // The alternate stack must hold the handler's frame; glibc tells the minimum.
    const long minimum = sysconf(_SC_MINSIGSTKSZ);
    alt_stack_size_ = 64 * 1024;
    if (minimum > 0 && static_cast<std::size_t>(minimum) * 4 > alt_stack_size_)
        alt_stack_size_ = static_cast<std::size_t>(minimum) * 4;
    alt_stack_ = mmap(nullptr, alt_stack_size_, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (alt_stack_ == MAP_FAILED) fatal("cannot map an alternate signal stack: %s", strerror(errno));
    stack_t alt{};
    alt.ss_sp = alt_stack_;
    alt.ss_size = alt_stack_size_;
    if (sigaltstack(&alt, &previous_) != 0) fatal("sigaltstack failed: %s", strerror(errno));

    // The handler is process-wide; install it once, remembering the previous one.
    static std::once_flag installed;
    std::call_once(installed, [] {
        struct sigaction action {};
        action.sa_sigaction = on_segv;
        action.sa_flags = SA_SIGINFO | SA_ONSTACK;
        sigemptyset(&action.sa_mask);
        sigaction(SIGSEGV, &action, &previous_segv);
    });
}

OverflowGuard::~OverflowGuard() {
    sigaltstack(&previous_, nullptr);
    munmap(alt_stack_, alt_stack_size_);
}

}  // namespace fib
