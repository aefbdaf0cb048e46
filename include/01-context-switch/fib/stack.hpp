// stack.hpp — lesson 1: a stack for a context, mmap'ed with a guard region below it.
//
//   high addresses   +------------------+  <- top()
//                    |  usable stack    |  grows down
//                    |  (size() bytes)  |
//                    +------------------+  <- bottom()
//                    |  guard region    |  touching it is SIGSEGV
//                    |  (kGuardSize)    |
//   low addresses    +------------------+  <- the mapping starts here
//
// The guard is 64 KiB, not one page. A function whose frame is bigger than a
// page, compiled without -fstack-clash-protection (the default for most user
// code), moves rsp down by its whole frame at once and writes there first:
// from near the bottom of the stack it would land below a one-page guard, in
// whatever mapping lies there, such as the stack of another context. Untouched
// guard pages cost no memory, and with Linux 6.13's guard regions no kernel
// mapping either (see stack.cpp).
//
// Pages are only backed by memory once touched, so a 64 KiB stack that uses
// 2 KiB costs one or two pages of RAM. Owns its mapping (RAII, move-only).
#pragma once

#include <cstddef>
#include <utility>

namespace fib {

class Stack {
public:
    static constexpr std::size_t kDefaultSize = 64 * 1024;
    static constexpr std::size_t kGuardSize = 64 * 1024;  // below every stack

    Stack() = default;  // no stack; only good to be moved into
    // Maps `usable_size` bytes (rounded up to whole pages) plus the guard region.
    // Throws std::system_error if the kernel refuses the mapping.
    explicit Stack(std::size_t usable_size);
    ~Stack() {
        if (bottom_) unmap();  // inline: most Stacks destroyed are moved-from, empty
    }

    Stack(Stack&& other) noexcept
        : bottom_(std::exchange(other.bottom_, nullptr)), size_(std::exchange(other.size_, 0)) {}
    Stack& operator=(Stack&& other) noexcept {
        if (this != &other) {
            Stack old(std::move(*this));  // our old mapping goes with `old`
            bottom_ = std::exchange(other.bottom_, nullptr);
            size_ = std::exchange(other.size_, 0);
        }
        return *this;
    }
    Stack(const Stack&) = delete;
    Stack& operator=(const Stack&) = delete;

    void* top() const { return bottom_ + size_; }  // one past the highest usable byte
    void* bottom() const { return bottom_; }       // lowest usable byte, above the guard
    std::size_t size() const { return size_; }     // usable bytes
    bool guard_contains(const void* address) const;
    explicit operator bool() const { return bottom_ != nullptr; }

private:
    void unmap();

    char* bottom_ = nullptr;  // the mapping starts kGuardSize below
    std::size_t size_ = 0;
};

// The system's page size (sysconf): 4 KiB on x86-64; 4, 16 or 64 KiB on AArch64.
std::size_t page_size();

// Whether stacks get guard regions (MADV_GUARD_INSTALL, Linux 6.13+) rather than
// PROT_NONE pages: only where a probe, once per process, saw a guard region fault.
bool guard_regions();

}  // namespace fib
