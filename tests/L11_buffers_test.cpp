// L11_buffers_test.cpp — lesson 11: the provided-buffer ring: idle receives hold no buffer,
// an empty pool parks receivers without losing a byte, and every buffer comes back.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <memory>
#include <utility>
#include <string>
#include <vector>

#include "L04_waiter_harness.hpp"
#include "L11_uring_harness.hpp"
#include "fib/fiber.hpp"
#include "fib/io.hpp"
#include "fib/uring_buffers.hpp"
#include "fib/waiter.hpp"

namespace {

using l04_waiter::make_fds;
using l04_waiter::Pair;
using l11_uring::ring_of;
using l11_uring::submitted;
using l11_uring::yield_until;
namespace ring = fib::io::ring;

// The bytes peer `i` sends: its number in every byte, with a position count, so that a
// byte from another connection, a lost or a repeated chunk all show.
std::string stream_of(int i, std::size_t size) {
    std::string bytes(size, '\0');
    for (std::size_t at = 0; at < size; ++at)
        bytes[at] = static_cast<char>((i * 31 + static_cast<int>(at / 7)) & 0xff);
    return bytes;
}

// 1,000 receives on idle sockets, all in the kernel, and a pool of 2 buffers: no buffer is
// taken until data comes. Then one peer writes: its receiver alone gets a buffer, with its
// bytes; the rest still hold none.
TEST(L11_Buffers, AThousandIdleReceivesHoldNoBufferUntilDataComes) {
    fib::FiberManager manager;
    fib::Waiter waiter("uring");
    SKIP_WITHOUT_RING(waiter);
    fib::UringPoller& poller = *ring_of(waiter);
    constexpr int kIdle = 1000;
    std::vector<Pair> pairs;
    for (int i = 0; i < kIdle; ++i) pairs.push_back(make_fds(true));
    {
        ring::BufferRing pool(2, 256);
        std::vector<std::string> got(kIdle);
        std::vector<fib::Fiber> receivers;
        receivers.reserve(kIdle);
        for (int i = 0; i < kIdle; ++i)
            receivers.emplace_back([&, i] {
                ring::Lease chunk;
                const ssize_t n = ring::receive(pool, pairs[i].first.get(), chunk);
                if (n > 0) got[i].assign(chunk.data(), static_cast<std::size_t>(n));
            });
        ASSERT_TRUE(yield_until([&] { return submitted(poller, kIdle); }, 200));
        EXPECT_EQ(pool.in_ring(), 2u);
        ASSERT_EQ(::write(pairs[500].second.get(), "hello", 5), 5);
        receivers[500].join();
        EXPECT_EQ(got[500], "hello");
        EXPECT_EQ(pool.in_ring(), 2u);  // its Lease is gone: the buffer is back
        EXPECT_EQ(poller.in_flight(), static_cast<std::size_t>(kIdle - 1));
        for (int i = 0; i < kIdle; ++i) pairs[i].second.reset();  // EOF for the rest
        for (fib::Fiber& receiver : receivers)
            if (receiver.joinable()) receiver.join();
        EXPECT_EQ(pool.in_ring(), 2u);
        EXPECT_EQ(pool.exhausted(), 0u);
    }
    EXPECT_EQ(poller.in_flight(), 0u);
}

// 64 connections, 4 buffers of 1 KiB, and receivers that hold each Lease across a yield
// before they take the bytes: the pool runs dry again and again. Each ENOBUFS leaves the data
// in the socket and parks the receiver until a buffer comes back; every connection still gets
// its 32 KiB, in order, and every buffer is in the ring at the end.
TEST(L11_Buffers, SixtyFourConnectionsOnFourBuffersGetEveryByteInOrderThroughEnobufs) {
    fib::FiberManager manager;
    fib::Waiter waiter("uring");
    SKIP_WITHOUT_RING(waiter);
    constexpr int kConnections = 64;
    constexpr std::size_t kBytes = 32 * 1024;
    std::vector<Pair> pairs;
    for (int i = 0; i < kConnections; ++i) pairs.push_back(make_fds(true));
    ring::BufferRing pool(4, 1024);
    std::vector<std::string> got(kConnections);
    std::vector<fib::Fiber> fibers;
    for (int i = 0; i < kConnections; ++i) {
        fibers.emplace_back([&, i] {
            const std::string bytes = stream_of(i, kBytes);
            EXPECT_EQ(fib::io::send_all(pairs[i].second.get(), bytes.data(), bytes.size()),
                      static_cast<ssize_t>(bytes.size()));
            pairs[i].second.reset();
        });
        fibers.emplace_back([&, i] {
            for (;;) {
                ring::Lease chunk;
                const ssize_t n = ring::receive(pool, pairs[i].first.get(), chunk);
                if (n < 0) fib::io::close(pairs[i].first.release());  // the writer stops: EPIPE
                if (n <= 0) return;
                fib::this_fiber::yield();  // the buffer stays out a while
                got[i].append(chunk.data(), static_cast<std::size_t>(n));
            }
        });
    }
    for (fib::Fiber& fiber : fibers) fiber.join();
    int intact = 0;
    for (int i = 0; i < kConnections; ++i) intact += got[i] == stream_of(i, kBytes);
    EXPECT_EQ(intact, kConnections);
    EXPECT_GT(pool.exhausted(), 0u);
    EXPECT_EQ(pool.in_ring(), 4u);
}

// A receive parked for a buffer (the pool's only one is leased) is cancelled: it says
// ECANCELED, and its bytes are still in the socket for the next receive, once the buffer is back.
TEST(L11_Buffers, AReceiveCancelledWhileWaitingForABufferLosesNoByte) {
    fib::FiberManager manager;
    fib::Waiter waiter("uring");
    SKIP_WITHOUT_RING(waiter);
    Pair holder = make_fds(true), waiting = make_fds(true);
    ring::BufferRing pool(1, 64);
    ring::Lease held;
    ASSERT_EQ(::write(holder.second.get(), "first", 5), 5);
    ASSERT_EQ(ring::receive(pool, holder.first.get(), held), 5);
    EXPECT_EQ(pool.in_ring(), 0u);
    ASSERT_EQ(::write(waiting.second.get(), "second", 6), 6);
    ssize_t result = 0;
    int error = 0;
    fib::Fiber receiver([&] {
        ring::Lease chunk;
        result = ring::receive(pool, waiting.first.get(), chunk);
        error = errno;
    });
    ASSERT_TRUE(yield_until([&] { return pool.exhausted() == 1; }));
    receiver.cancel();
    receiver.join();
    EXPECT_EQ(result, -1);
    EXPECT_EQ(error, ECANCELED);
    held.reset();
    ring::Lease chunk;
    ASSERT_EQ(ring::receive(pool, waiting.first.get(), chunk), 6);
    EXPECT_EQ(std::string(chunk.data(), chunk.size()), "second");
}

// The peer closes: the receive says 0. The kernel may have picked a buffer for it all the
// same (the CQE then says IORING_CQE_F_BUFFER): the Lease has it, and gives it back.
TEST(L11_Buffers, EveryBufferComesBackAfterEndOfFileAndAfterMovedLeases) {
    fib::FiberManager manager;
    fib::Waiter waiter("uring");
    SKIP_WITHOUT_RING(waiter);
    Pair pair = make_fds(true);
    ring::BufferRing pool(2, 64);
    ring::Lease first, second;
    ASSERT_EQ(::write(pair.second.get(), "ab", 2), 2);
    ASSERT_EQ(ring::receive(pool, pair.first.get(), first), 2);
    second = std::move(first);
    EXPECT_EQ(first.size(), 0u);
    EXPECT_EQ(std::string(second.data(), second.size()), "ab");
    EXPECT_EQ(pool.in_ring(), 1u);
    pair.second.reset();
    ring::Lease last;
    EXPECT_EQ(ring::receive(pool, pair.first.get(), last), 0);
    last.reset();
    second.reset();
    EXPECT_EQ(pool.in_ring(), 2u);
}

// Buffers the kernel may still write, or a Lease still reads, must not be unmapped.
TEST(L11_BuffersDeathTest, APoolDestroyedWithABufferLeasedStopsTheProgramAndSaysSo) {
    {
        fib::FiberManager manager;
        fib::Waiter waiter("uring");
        SKIP_WITHOUT_RING(waiter);
    }
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    EXPECT_DEATH(
        {
            fib::FiberManager manager;
            fib::Waiter waiter("uring");
            Pair pair = make_fds(true);
            auto pool = std::make_unique<ring::BufferRing>(1, 64);
            ring::Lease chunk;
            if (::write(pair.second.get(), "x", 1) == 1) ring::receive(*pool, pair.first.get(), chunk);
            pool.reset();
        },
        "a BufferRing was destroyed with 0 receive\\(s\\) under way and 1 buffer\\(s\\) leased");
}

}  // namespace
