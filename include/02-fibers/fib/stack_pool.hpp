// stack_pool.hpp — lesson 2: finished fibers give their stacks back for the next spawn.
//
// mmap + mprotect + munmap cost three system calls and page faults on first
// touch; a pooled stack costs a vector pop and its pages are already mapped.
// Only stacks of the default size are pooled; others are unmapped when freed.
//
// The pool keeps its high-water mark of stacks, but not of memory. The kWarm
// stacks handed back last stay as they are, ready for the next spawns. Beyond
// those, the coldest stacks give their pages back to the kernel, once each
// (madvise MADV_DONTNEED): after a burst of 100,000 fibers the process keeps
// the mappings, and the memory of a few dozen stacks. A trimmed stack that is
// taken again gets fresh zero pages as it is touched.
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
    std::size_t trimmed() const { return trimmed_total_; }  // times a stack's pages went back

    static constexpr std::size_t kWarm = 64;

private:
    std::size_t pooled_size_;
    std::vector<Stack> free_;      // the last handed back at the end, taken first
    std::size_t trimmed_ = 0;      // free_[0, trimmed_) have given their pages back
    std::size_t created_ = 0;
    std::size_t trimmed_total_ = 0;
};

}  // namespace fib
