// stack_high_water.hpp — lesson 12: how many bytes of its stack a fiber really used.
//
// A fiber reserves Stack::kDefaultSize (64 KiB) but only the pages it touches
// cost memory. To size stacks from facts rather than guesses, the library
// measures how deep each stack was written, as folly's fibers do with
// recordStackEvery. Folly fills a stack with a magic pattern and later looks
// for the deepest word that is no longer the pattern; filling writes every
// page, so a 64 KiB stack costs 64 KiB of memory, and folly does it for a
// sample of fibers only. Here the pattern is zero, which the kernel already
// gives: a fresh mapping reads as zeros, and its untouched pages are not even
// resident. The scan asks mincore() which pages are resident, skips the
// others (they are zero), and looks for the deepest non-zero word in the rest.
//
//   top()     +------------------+
//             | record, callable |   counted: they occupy the stack too
//             | frames           |
//             +------------------+  <- the deepest non-zero word
//             | zeros            |   never written, or only with zeros
//   bottom()  +------------------+
//
// The pitfall is the stack pool: a stack handed back by a finished fiber still
// holds what that fiber wrote, so the next fiber on it would be measured as
// deep as the deepest of its predecessors. Lesson 12's pool therefore zeroes,
// as it takes a stack back, every byte from that stack's deepest non-zero word
// up to its top (erase_stack_use below): what a fiber leaves behind is exactly
// what it used, and the pool hands out stacks that read as zeros again. The
// cost is paid once per finished fiber, in proportion to what it used: one
// mincore() call, a scan of its resident pages, a memset of the used part.
//
// What the figure means, exactly: the distance from the deepest non-zero word
// of the stack to its top(), in bytes, a multiple of 8. Its errors are all
// below the truth, never above:
// - a word written with zero does not count: when the deepest words a fiber
//   wrote were zeros (a zeroed buffer, a null pointer spilled), the figure
//   stops at the deepest non-zero word above them;
// - space a frame reserved but never wrote (an array left uninitialised) does
//   not count either: this is bytes written, not how far rsp went;
// - a page swapped out is not resident, and is taken for untouched.
// It never exceeds the stack's size(). A fiber that overflows its stack never
// gets here: the guard below it stops the program (overflow_guard.hpp).
#pragma once

#include <cstddef>

#include "fib/fiber_record.hpp"
#include "fib/stack.hpp"

namespace fib {

// Bytes of `stack` from its deepest non-zero word up to top(); 0 for an empty
// Stack. Safe to call from the fiber that runs on the stack (its own frames
// are then counted) or from another, at any time.
std::size_t stack_high_water(const Stack& stack);

// The same for a fiber's own stack; 0 for the main fiber, which runs on the
// thread's stack, not one of ours.
std::size_t stack_high_water(const FiberRecord& fiber);

// The bytes reserved for that stack (its usable size, the guard not counted);
// 0 for the main fiber.
std::size_t stack_reserved(const FiberRecord& fiber);

namespace this_fiber {
// stack_high_water() of the running fiber, its own frames included; 0 on the
// main fiber and on a thread without a FiberManager.
std::size_t stack_high_water();
}  // namespace this_fiber

// For the stack pool, once the stack's fiber has ended: zeroes every byte from
// the deepest non-zero word up to top(), so that the stack reads as zeros again.
// Returns the high-water mark it erased.
std::size_t erase_stack_use(const Stack& stack);

}  // namespace fib
