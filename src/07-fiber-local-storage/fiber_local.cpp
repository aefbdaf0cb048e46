// fiber_local.cpp — lesson 7: the layout of fiber-local blocks, their pool, and a plain thread's block.
#include "fib/fiber_local.hpp"

#include <unistd.h>

#include <algorithm>

#include "fib/fatal.hpp"
#include "fib/fiber_manager.hpp"

namespace fib {
namespace {

// Every fiber_local of the program, in declaration order. A block starts with
// its self pointer; each variable follows at its own offset.
struct Layout {
    std::vector<FiberLocalSlot> slots;
    std::size_t size = sizeof(void*);
    std::size_t align = alignof(void*);
    bool fixed = false;  // a block exists: no more variables
};

Layout& layout() {
    static Layout the_layout;
    return the_layout;
}

void* allocate_block() {
    Layout& l = layout();
    l.fixed = true;
    void* block = ::operator new(l.size, std::align_val_t{l.align});
    *static_cast<void**>(block) = block;  // what `mov %gs:0` reads
    return block;
}

void free_block(void* block) { ::operator delete(block, std::align_val_t{layout().align}); }

// A thread_local destroyed after the thread's block (one constructed before
// the thread's first fiber_local access) must not reach the freed block. The
// flag lives outside ThreadBlock: the compiler may drop a destructor's stores
// to the object it ends.
constinit thread_local bool thread_block_gone = false;

// The block of a thread that runs no fibers with blocks of their own: made at
// its first access, freed as the thread exits. Reached without %gs.
struct ThreadBlock {
    void* block = nullptr;
    ~ThreadBlock() {
        if (!block) return;
        FiberLocalPool::destroy_values(block);
        free_block(block);
        thread_block_gone = true;
    }
};
thread_local ThreadBlock thread_block;

}  // namespace

namespace detail {

#if defined(__aarch64__)
constinit thread_local char* fiber_local_block asm("fib_fiber_local_block") = nullptr;
#else
constinit thread_local bool gs_block_ready = false;
#endif

std::size_t register_fiber_local(std::size_t size, std::size_t align, FiberLocalSlot slot) {
    Layout& l = layout();
    if (l.fixed)
        fatal("a fib::fiber_local was declared after the first fiber-local block was made; "
              "declare fiber_locals at namespace scope");
    slot.offset = (l.size + align - 1) / align * align;
    l.size = slot.offset + size;
    l.align = std::max(l.align, align);
    l.slots.push_back(slot);
    return slot.offset;
}

// A fiber_local access from code whose %fs block was not told that %gs is set
// up. Inside a FiberManager that means nobody gives its fibers blocks: say so.
// Outside one, this is a thread of its own, perhaps started from a fiber and
// so with that fiber's %gs base inherited: it gets a block of its own, found
// through a thread_local rather than %gs, and on every access checks again,
// so that fibers started on it later without a FiberTls are refused too.
void* prepare_gs_block() {
    if (FiberManager* manager = FiberManager::current())
        fatal("%s used a fib::fiber_local, but its FiberManager has no FiberTls with fiber_locals",
              label(*manager->running()).text);
    if (thread_block_gone)
        fatal("a fib::fiber_local was used as thread %d exits, after its fiber-local block was "
              "destroyed (from a thread_local's destructor?)",
              static_cast<int>(gettid()));
    if (!thread_block.block) {
        thread_block.block = allocate_block();
        FiberLocalPool::construct_values(thread_block.block);
    }
    return thread_block.block;
}

}  // namespace detail

FiberLocalPool::~FiberLocalPool() {
    for (void* block : free_) free_block(block);
}

void* FiberLocalPool::take() {
    if (free_.empty()) {
        ++created_;
        return allocate_block();
    }
    void* block = free_.back();
    free_.pop_back();
    return block;
}

void FiberLocalPool::give_back(void* block) { free_.push_back(block); }

// A copy constructor that throws leaves none of this block's copies alive.
void FiberLocalPool::construct_values(void* block) {
    const std::vector<FiberLocalSlot>& slots = layout().slots;
    for (auto slot = slots.begin(); slot != slots.end(); ++slot) {
        try {
            slot->construct(static_cast<char*>(block) + slot->offset, slot->initial);
        } catch (...) {
            while (slot != slots.begin()) {
                --slot;
                slot->destroy(static_cast<char*>(block) + slot->offset);
            }
            throw;
        }
    }
}

void FiberLocalPool::destroy_values(void* block) {
    const std::vector<FiberLocalSlot>& slots = layout().slots;
    for (auto slot = slots.rbegin(); slot != slots.rend(); ++slot)
        slot->destroy(static_cast<char*>(block) + slot->offset);
}

}  // namespace fib
