// fiber_local.hpp — lesson 7: fiber_local<T>, a variable with one copy per fiber, reached through %gs.
//
//   fib::fiber_local<int> requests{0};        // at namespace scope, like a global
//   ++*requests;                              // this fiber's copy
//
// Nothing compiled by g++ or glibc uses the %gs base on x86-64 Linux, so we
// can point it at a block of our own per fiber, and switch it in the switch
// routine, without touching libc's TLS at all:
//
//   %gs base -> +---------------------+
//               | self                |  gs:0 holds the block's own address
//               | requests  (int)     |  block + offset of each fiber_local
//               | other fiber_locals  |
//               +---------------------+
//
// g++ 12 rejects the __seg_gs address space in C++ (clang accepts it), so a
// copy is found by reading the self pointer (`mov %gs:0`) and adding the
// variable's offset. Each fiber's copy starts as a copy of the value given at
// the declaration, constructed on the fiber as it starts and destroyed as its
// function ends. Declare fiber_locals at namespace scope: the layout is fixed
// when the first block is made, and a later declaration stops the program.
//
// Fibers get blocks from a FiberTls (fiber_tls.hpp) with fiber_locals on. A
// thread with no FiberManager gets a block of its own at its first access: a
// thread started from a fiber must not go on using that fiber's block, which
// it would through %gs, since a new thread inherits its creator's %gs base.
#pragma once

#include <cstddef>
#include <new>
#include <utility>
#include <vector>

namespace fib {

// One fiber_local variable's place in every block, and how to make its copy.
struct FiberLocalSlot {
    std::size_t offset;
    const void* initial;
    void (*construct)(void* at, const void* initial);
    void (*destroy)(void* at);
};

// The blocks of one FiberTls, recycled.
class FiberLocalPool {
public:
    FiberLocalPool() = default;
    ~FiberLocalPool();
    FiberLocalPool(const FiberLocalPool&) = delete;
    FiberLocalPool& operator=(const FiberLocalPool&) = delete;

    void* take();  // a block with its self pointer set; no copy constructed yet
    void give_back(void* block);
    static void construct_values(void* block);  // on the fiber, as it starts
    static void destroy_values(void* block);    // on the fiber, as it ends

    std::size_t created() const { return created_; }
    std::size_t pooled() const { return free_.size(); }

private:
    std::vector<void*> free_;
    std::size_t created_ = 0;
};

namespace detail {

std::size_t register_fiber_local(std::size_t size, std::size_t align, FiberLocalSlot slot);

#if defined(__aarch64__)

// AArch64 has no register to spare for a block of our own: tpidrro_el0 is
// read-only to user code (writing it is SIGILL), x18 is the platform register
// that code built for other ABIs may use, tpidr2_el0 belongs to SME. So the
// block's address lives in this thread_local: the switch routine stores the
// next fiber's there (asm/07-fiber-local-storage/aarch64/switch_context_tls.S),
// and with a TLS block per fiber each block holds its own fiber's. Null on a
// thread no FiberTls set it for: a new thread starts with null whatever
// fiber created it.
extern constinit thread_local char* fiber_local_block asm("fib_fiber_local_block");
void* prepare_gs_block();  // the block when none is set: see fiber_local.cpp

inline char* gs_block() {
    char* block = fiber_local_block;
    if (block == nullptr) [[unlikely]]
        return static_cast<char*>(prepare_gs_block());
    return block;
}

#else

// True while this TLS block's code may read %gs: set for main by FiberTls and
// for a fiber with TLS of its own as it starts. Per %fs block, hence per
// thread: a new thread starts with false, whatever %gs base it inherited.
extern constinit thread_local bool gs_block_ready;
void* prepare_gs_block();  // the block when %gs is not ours: see fiber_local.cpp

inline char* gs_block() {
    if (!gs_block_ready) [[unlikely]]
        return static_cast<char*>(prepare_gs_block());
    char* block;
    asm volatile("movq %%gs:0, %0" : "=r"(block));
    return block;
}

#endif

}  // namespace detail

template <class T>
class fiber_local {
public:
    template <class... Args>
    explicit fiber_local(Args&&... initial) : initial_(std::forward<Args>(initial)...) {
        offset_ = detail::register_fiber_local(sizeof(T), alignof(T),
                                               FiberLocalSlot{0, &initial_, &construct, &destroy});
    }
    fiber_local(const fiber_local&) = delete;
    fiber_local& operator=(const fiber_local&) = delete;

    T& get() const { return *reinterpret_cast<T*>(detail::gs_block() + offset_); }
    T& operator*() const { return get(); }
    T* operator->() const { return &get(); }

private:
    static void construct(void* at, const void* initial) { new (at) T(*static_cast<const T*>(initial)); }
    static void destroy(void* at) { static_cast<T*>(at)->~T(); }

    T initial_;  // every fiber's copy starts as a copy of this
    std::size_t offset_ = 0;
};

}  // namespace fib
