// stack_pool.cpp — lesson 2: taking stacks from, and giving them back to, the pool.
#include "fib/stack_pool.hpp"

#include <sanitizer/asan_interface.h>
#include <sys/mman.h>

#include <utility>

namespace fib {

Stack StackPool::take(std::size_t size) {
    if (size <= pooled_size_ && !free_.empty()) {
        Stack stack = std::move(free_.back());
        free_.pop_back();
        if (trimmed_ > free_.size()) trimmed_ = free_.size();
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
