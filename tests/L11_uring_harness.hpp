// L11_uring_harness.hpp — lesson 11: what the io_uring tests share: the Waiter's ring (or why
// a test skips without one), a bounded "yield until", and "the operation is in the kernel".
#pragma once

#include <gtest/gtest.h>

#include <cstddef>

#include "fib/fiber.hpp"
#include "fib/uring_poller.hpp"
#include "fib/waiter.hpp"

namespace l11_uring {

// The Waiter's UringPoller when fib::io runs on the ring; nullptr when the kernel refused
// io_uring and the Waiter fell back to epoll (scripts/without-io-uring.py does that).
inline fib::UringPoller* ring_of(fib::Waiter& waiter) { return waiter.poller().uring(); }

// For a test that means the ring: skip, saying why, when the Waiter fell back.
#define SKIP_WITHOUT_RING(waiter)                                                                 \
    if (!l11_uring::ring_of(waiter))                                                              \
    GTEST_SKIP() << "io_uring is refused here: the Waiter fell back to " << (waiter).poller().name() \
                 << " (scripts/without-io-uring.py, a seccomp filter, or an old kernel)"

// Yields (at most `bound` times) until `done()`; whether it became true.
template <class Done>
bool yield_until(Done done, int bound = 50) {
    for (int i = 0; i < bound && !done(); ++i) fib::this_fiber::yield();
    return done();
}

// `count` operations are in the kernel: started, and every SQE handed over by an enter.
inline bool submitted(const fib::UringPoller& ring, std::size_t count) {
    return ring.in_flight() == count && ring.ring().unsubmitted() == 0;
}

}  // namespace l11_uring
