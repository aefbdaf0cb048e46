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
// deep as the deepest of its predecessors. So while a StackHighWaterScope
// lives on a thread, the pool erases a pooled stack as it hands it out
// (erase_stack_use: zeroes from its deepest non-zero word up to its top), and
// each fiber spawned there starts on zeros, as on a fresh mapping.
//
// Why only inside a scope: erasing costs, per spawn, one mincore() call, a
// scan of the resident pages and a memset of the used part. The mincore()
// call alone takes ~0.9 us on the course's 2-core VM, where a whole spawn_join
// takes ~0.15 us: inside a scope spawn_join is 4.7x to 8x slower
// (make bench-lesson12 SECTIONS=memory: spawn_join_measured against
// spawn_join_plain in the same run). A pattern fill, as folly's, costs more:
// it writes every page, so each stack would cost 64 KiB of memory instead of
// the one or two pages it touches. Measuring is for a test, a bench or a
// debugging run, as folly's recordStackEvery samples only some fibers.
//
// What the figure means, exactly: the distance from the deepest non-zero word
// of the stack to its top(), in bytes, a multiple of 8. For a fiber whose
// stack started as zeros (spawned inside a scope, or on a stack fresh from
// mmap) its errors are all below the truth, never above:
// - a word written with zero does not count: when the deepest words a fiber
//   wrote were zeros (a zeroed buffer, a null pointer spilled), the figure
//   stops at the deepest non-zero word above them;
// - space a frame reserved but never wrote (an array left uninitialised) does
//   not count either: this is bytes written, not how far rsp went;
// - a page swapped out is not resident, and is taken for untouched.
// Outside a scope, on a stack the pool handed out again, the figure is an
// upper bound instead: the deepest any of that stack's fibers wrote. Either
// way it never exceeds the stack's size(): a fiber that writes below its
// stack hits the guard, which stops the program (overflow_guard.hpp).
#pragma once

#include <cstddef>

#include "fib/fiber_record.hpp"
#include "fib/stack.hpp"

namespace fib {

// Bytes of `stack` from its deepest non-zero word up to top(); 0 for an empty
// Stack. Call it from the thread whose fibers use the stack: from the fiber
// that runs on it (its own frames are then counted) or from another.
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

// While one lives on a thread, the stack pools of that thread hand out stacks
// that read as zeros, so that stack_high_water() of every fiber spawned there
// has only the errors above. A fiber spawned before the scope keeps the stack
// it got. Scopes nest; each lives and dies on the thread that made it.
class StackHighWaterScope {
public:
    StackHighWaterScope();
    ~StackHighWaterScope();
    StackHighWaterScope(const StackHighWaterScope&) = delete;
    StackHighWaterScope& operator=(const StackHighWaterScope&) = delete;

    // Whether one lives on the calling thread: the pool asks before it hands out a stack.
    static bool active();
};

// For the stack pool, before a pooled stack's next fiber: zeroes every byte
// from the deepest non-zero word up to top(), so that the stack reads as zeros
// again. Returns the high-water mark it erased.
std::size_t erase_stack_use(const Stack& stack);

}  // namespace fib
