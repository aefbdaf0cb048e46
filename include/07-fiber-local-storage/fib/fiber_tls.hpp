// fiber_tls.hpp — lesson 7: FiberTls, which gives every fiber of a manager its own TLS and fiber_locals.
//
//   fib::FiberManager manager;
//   fib::FiberTls tls(manager);          // before the first fiber (and the Waiter)
//   fib::Fiber worker([] { errno = 0; /* this fiber's errno */ });
//
// With thread_locals on, each fiber runs on a TLS block of its own (tls_block.hpp):
// every thread_local, errno, libstdc++'s exception state and a shared library's
// TLS are per fiber, exactly as they are per thread. With fiber_locals on, each
// fiber has a block for fib::fiber_local<T> (fiber_local.hpp) at its %gs base and
// libc's TLS stays per thread. The switch routine loads the %fs base, the %gs
// base or both (asm/switch_context_tls.S). Fibers that existed before cannot be
// given blocks: install it first. Destroy it after every fiber has ended.
#pragma once

#include <cstddef>

#include "fib/fiber_local.hpp"
#include "fib/fiber_manager.hpp"
#include "fib/tls_block.hpp"

namespace fib {

struct FiberTlsOptions {
    bool thread_locals = true;  // %fs: a TLS block per fiber
    bool fiber_locals = true;   // %gs: a fiber_local block per fiber
};

struct FiberTlsStats {
    std::size_t tls_blocks_created = 0;    // TLS blocks ever made (each ~3.6 KiB + DTV)
    std::size_t tls_blocks_pooled = 0;     // waiting for the next fiber
    std::size_t local_blocks_created = 0;  // fiber_local blocks ever made (main's too)
    std::size_t local_blocks_pooled = 0;
    bool fsgsbase = false;                 // x86-64: bases written by instruction, not arch_prctl
};

class FiberTls final : public FiberEnvironment {
public:
    explicit FiberTls(FiberManager& manager, FiberTlsOptions options = {});
    ~FiberTls();
    FiberTls(const FiberTls&) = delete;
    FiberTls& operator=(const FiberTls&) = delete;

    FiberTlsStats stats() const;

    void fiber_created(FiberRecord& fiber) override;
    void fiber_starting(FiberRecord& fiber) override;
    void fiber_ending(FiberRecord& fiber) override;
    void fiber_released(FiberRecord& fiber) override;

private:
    FiberManager& manager_;
    FiberTlsOptions options_;
    TlsBlockPool tls_blocks_;
    FiberLocalPool local_blocks_;
    FiberRecord* main_;
};

}  // namespace fib
