// fiber_tls.cpp — lesson 7: handing each fiber its blocks, and running their set-up and clean-up on it.
#include "fib/fiber_tls.hpp"

#include <cstdint>

#include "fib/fatal.hpp"
#include "fib/tls_switch.hpp"

namespace fib {
namespace {

std::uint64_t base_of(const void* block) { return reinterpret_cast<std::uint64_t>(block); }
void* block_at(std::uint64_t base) { return reinterpret_cast<void*>(base); }

}  // namespace

// main keeps the thread's own TLS; with fiber_locals it gets a block at once,
// and %gs points at it from here on. The manager is told last: a fiber_local's
// copy constructor may throw before, and a FiberTls that was never made must
// not stay installed.
FiberTls::FiberTls(FiberManager& manager, FiberTlsOptions options)
    : manager_(manager), options_(options), main_(manager.running()) {
#if defined(__SANITIZE_THREAD__)
    // ThreadSanitizer keeps its state for the thread in static TLS, at %fs: a
    // fiber's own block would give it a copy of that state, stale at once.
    if (options_.thread_locals)
        fatal("a FiberTls with thread_locals cannot run under ThreadSanitizer, which keeps its own "
              "per-thread state in the TLS each fiber would replace; use TSAN=1 for the stages "
              "without it, or thread_locals = false");
#endif
    if (options_.fiber_locals) {
        void* block = local_blocks_.take();
        try {
            FiberLocalPool::construct_values(block);
        } catch (...) {
            local_blocks_.give_back(block);
            throw;
        }
        locals_base(main_->context) = base_of(block);
        set_gs_base(block);
#if !defined(__aarch64__)
        detail::gs_block_ready = true;
#endif
    }
    tls_base(main_->context) = base_of(tls_blocks_.thread());
    manager_.set_environment(this, tls_switch_routine(options_.thread_locals, options_.fiber_locals));
}

FiberTls::~FiberTls() {
    if (manager_.running() != main_ || manager_.stats().records > 0)
        fatal("the FiberTls was destroyed while fibers still exist; destroy it after they end");
    manager_.set_environment(nullptr, &switch_context);
    if (options_.fiber_locals) {
        void* block = block_at(locals_base(main_->context));
        FiberLocalPool::destroy_values(block);
#if !defined(__aarch64__)
        detail::gs_block_ready = false;
#endif
        set_gs_base(nullptr);
        local_blocks_.give_back(block);
    }
    tls_base(main_->context) = locals_base(main_->context) = 0;
}

// Before its first switch: the bases that switch will load.
// Either take may throw bad_alloc: the first block goes back if the second fails.
void FiberTls::fiber_created(FiberRecord& fiber) {
    TcbHead* tls_block = options_.thread_locals ? tls_blocks_.take() : tls_blocks_.thread();
    if (options_.fiber_locals) {
        try {
            locals_base(fiber.context) = base_of(local_blocks_.take());
        } catch (...) {
            if (options_.thread_locals) tls_blocks_.give_back(tls_block);
            throw;
        }
    }
    tls_base(fiber.context) = base_of(tls_block);
}

// On the fiber, its own blocks in place: what pthread_create's new thread
// would do first.
void FiberTls::fiber_starting(FiberRecord& fiber) {
    if (options_.thread_locals) {
        tls_blocks_.fiber_starting();
#if !defined(__aarch64__)
        detail::gs_block_ready = options_.fiber_locals;  // this block's own copy
#endif
    }
    if (options_.fiber_locals) FiberLocalPool::construct_values(block_at(locals_base(fiber.context)));
}

// On the fiber, after its function: what a thread's exit would do. In the
// reverse order of construction: thread_locals were made as the body ran.
void FiberTls::fiber_ending(FiberRecord& fiber) {
    if (options_.thread_locals) TlsBlockPool::fiber_ending();
    if (options_.fiber_locals) FiberLocalPool::destroy_values(block_at(locals_base(fiber.context)));
}

// The fiber's record is going (after join, or at once for a detached fiber):
// its blocks wait in the pools for the next fiber.
void FiberTls::fiber_released(FiberRecord& fiber) {
    if (options_.thread_locals) tls_blocks_.give_back(static_cast<TcbHead*>(block_at(tls_base(fiber.context))));
    if (options_.fiber_locals) local_blocks_.give_back(block_at(locals_base(fiber.context)));
}

FiberTlsStats FiberTls::stats() const {
    return FiberTlsStats{
        .tls_blocks_created = tls_blocks_.created(),
        .tls_blocks_pooled = tls_blocks_.pooled(),
        .local_blocks_created = local_blocks_.created(),
        .local_blocks_pooled = local_blocks_.pooled(),
#if !defined(__aarch64__)
        .fsgsbase = fsgsbase_usable(),
#endif
    };
}

}  // namespace fib
