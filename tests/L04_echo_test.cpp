// L04_echo_test.cpp — lesson 4: the echo server under load, over real loopback sockets. 200
// concurrent clients get every byte back; 5,000 connect/disconnect cycles and a stop with
// clients connected leave no fd, fiber or stack behind. The hostile clients (a reset mid-write,
// a reader that never reads, running out of fds) are in tests/L04_echo_hostile_test.cpp; the
// helpers both use are in tests/L04_echo_harness.hpp.
#include <gtest/gtest.h>

#include <sys/socket.h>

#include <cerrno>
#include <cstring>
#include <random>
#include <vector>

#include "L04_echo_harness.hpp"
#include "fib/fiber.hpp"
#include "fib/unique_fd.hpp"
#include "fib/waiter.hpp"

namespace {

using namespace l04_echo;

TEST(L04_Echo, TwoHundredConcurrentClientsGetEveryByteOfRandomPayloadsBack) {
    EchoServerThread server;
    fib::FiberManager manager;
    fib::Waiter waiter;
    // Sizes from 1 byte to 1 MiB, fixed seed; every 50th is exactly 1 MiB, the next 1 byte.
    std::mt19937_64 random(4);
    std::vector<Bytes> payloads;
    std::uint64_t total = 0;
    for (int i = 0; i < 200; ++i) {
        const std::size_t size = i % 50 == 0 ? kMiB : i % 50 == 1 ? 1 : random() % kMiB + 1;
        payloads.push_back(random_bytes(size, random));
        total += size;
    }
    EXPECT_EQ(round_trips_at_once(server.port, payloads), 200);
    server.stop();
    EXPECT_EQ(server.live->bytes_echoed(), total);
    EXPECT_EQ(server.live->connections_served(), 200u);
    EXPECT_EQ(server.live->open_connections(), 0u);
}

TEST(L04_Echo, FiveThousandConnectDisconnectCyclesLeakNoFdFiberOrStack) {
    EchoServerThread server;
    const std::size_t fds_before = open_fds().size();
    // Even cycles echo one byte before closing; odd ones close at once, maybe before the
    // server has accepted them.
    int echoed = 0;
    for (int cycle = 0; cycle < 5000; ++cycle) {
        fib::UniqueFd client = blocking_socket();
        ASSERT_TRUE(connect_to(client.get(), server.port)) << std::strerror(errno);
        if (cycle % 2 == 0) echoed += blocking_echo(client.get(), 1);
    }
    EXPECT_EQ(echoed, 2500);
    ASSERT_TRUE(eventually([&] {
        return server.live->connections_served() == 5000 && server.live->open_connections() == 0;
    }));
    EXPECT_EQ(open_fds().size(), fds_before);
    server.stop();
    const EchoServerThread::After& after = server.after;
    EXPECT_EQ(server.live->connections_served(), 5000u);
    EXPECT_EQ(server.live->bytes_echoed(), 2500u);
    // Spawned: the acceptor, one fiber per client and the Waiter's fiber each time it started,
    // all finished and released, every stack back in the pool.
    EXPECT_EQ(after.manager.spawned, 5001u + after.waiter.fibers_started);
    EXPECT_EQ(after.manager.finished, after.manager.spawned);
    EXPECT_EQ(after.manager.records, 0u);
    EXPECT_EQ(after.manager.stacks_pooled, after.manager.stacks_created);
    EXPECT_EQ(after.waiter.waiting, 0u);
}

TEST(L04_Echo, StopWithIdleClientsConnectedClosesThemAllAndReturns) {
    EchoServerThread server;
    std::vector<fib::UniqueFd> clients;
    for (int i = 0; i < 10; ++i) {
        clients.push_back(blocking_socket());
        ASSERT_TRUE(connect_to(clients.back().get(), server.port));
    }
    ASSERT_TRUE(eventually([&] { return server.live->open_connections() == 10; }));
    server.stop();
    EXPECT_TRUE(server.after.returned);
    EXPECT_EQ(server.live->open_connections(), 0u);
    EXPECT_EQ(server.live->connections_served(), 10u);
    for (const fib::UniqueFd& client : clients) {
        char byte;
        const ssize_t n = ::recv(client.get(), &byte, 1, 0);
        EXPECT_TRUE(n == 0 || (n < 0 && errno == ECONNRESET)) << n << " " << std::strerror(errno);
    }
}

}  // namespace
