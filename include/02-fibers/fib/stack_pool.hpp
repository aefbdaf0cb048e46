// stack_pool.hpp — lesson 2: finished fibers give their stacks back for the next spawn.
//
// mmap + mprotect + munmap cost three system calls and page faults on first
// touch; a pooled stack costs a vector pop and its pages are already mapped.
// Only stacks of the default size are pooled; others are unmapped when freed.
// The pool keeps its high-water mark (see the lesson's exercises for a cap).
#pragma once

#include <cstddef>
#include <vector>

#include "fib/stack.hpp"

namespace fib {

class StackPool {
public:
    explicit StackPool(std::size_t pooled_size = Stack::kDefaultSize) : pooled_size_(pooled_size) {}

    // A stack with at least `size` usable bytes: from the pool when it fits.
    Stack take(std::size_t size);
    void give_back(Stack stack);

    std::size_t created() const { return created_; }  // stacks ever mapped
    std::size_t pooled() const { return free_.size(); }  // stacks waiting for reuse

private:
    std::size_t pooled_size_;
    std::vector<Stack> free_;
    std::size_t created_ = 0;
};

}  // namespace fib
