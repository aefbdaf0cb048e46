// stack_pool.cpp — lesson 12: lesson 2's stack pool, which hands out stacks that read as zeros.
//
// Replaces lesson 2's stack_pool.cpp from stage 12 on: inside a
// StackHighWaterScope, take() erases what a pooled stack's earlier fibers
// wrote (erase_stack_use), so that the next fiber's stack_high_water() counts
// only its own use (stack_high_water.hpp says why, and why only there).
#include "fib/stack_pool.hpp"

#include <sanitizer/asan_interface.h>
#include <sys/mman.h>

#include <utility>

#include "fib/stack_high_water.hpp"

namespace fib {

Stack StackPool::take(std::size_t size) {
    if (size <= pooled_size_ && !free_.empty()) {
        Stack stack = std::move(free_.back());
        free_.pop_back();
        if (trimmed_ > free_.size()) trimmed_ = free_.size();
        // Measured, its fiber starts from zeros, as on a fresh mapping.
        if (StackHighWaterScope::active()) erase_stack_use(stack);
        return stack;
    }
    ++created_;
    return Stack(size <= pooled_size_ ? pooled_size_ : size);
}

void StackPool::give_back(Stack stack) {
    if (stack.size() != pooled_size_) return;  // unmapped by ~Stack
    // A finished fiber never returned from its outermost frames, so ASan may
    // still hold their red zones as poisoned. Clear them before reuse (no-op
    // without ASan).
    ASAN_UNPOISON_MEMORY_REGION(stack.bottom(), stack.size());
    free_.push_back(std::move(stack));
    // The coldest stack beyond the warm ones gives its pages back, once.
    while (free_.size() - trimmed_ > kWarm) {
        const Stack& cold = free_[trimmed_++];
        madvise(cold.bottom(), cold.size(), MADV_DONTNEED);
        ++trimmed_total_;
    }
}

}  // namespace fib
