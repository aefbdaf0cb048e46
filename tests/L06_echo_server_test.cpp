// L06_echo_server_test.cpp — lesson 6: TimedEchoServer's idle timeout, and UDP echo on the Waiter.
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>

#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include "../lessons/06-time-and-events/timed_echo_server.hpp"
#include "../lessons/06-time-and-events/udp_echo.hpp"
#include "L04_echo_harness.hpp"
#include "L04_server_thread.hpp"

using namespace std::chrono_literals;
using l04_echo::blocking_echo;
using l04_echo::blocking_socket;
using l04_echo::connect_to;

namespace {

// True once the peer has closed `socket` (recv gives 0), without blocking.
bool closed_by_peer(int socket) {
    char byte;
    return ::recv(socket, &byte, 1, MSG_DONTWAIT) == 0;
}

}  // namespace

// The active client talks every 10 ms, far inside the 1 s timeout; the idle
// one says nothing. The test waits (20 s at most) for the idle one's EOF, then
// checks that the active one is still served. Nothing depends on how long it took,
// as long as this thread never stalls for the whole timeout between two echoes: at
// 300 ms it did once, on a 2-core machine with a load of 8 (the active client was
// closed too).
TEST(L06_IdleTimeout, ClosesASilentClientAndKeepsOneThatTalks) {
    ServerThread<TimedEchoServer> served(
        TimedEchoOptions{.port = 0, .quiet = true, .idle_timeout = 1s});
    fib::UniqueFd idle = blocking_socket(), active = blocking_socket();
    ASSERT_TRUE(connect_to(idle.get(), served.port));
    ASSERT_TRUE(connect_to(active.get(), served.port));
    ASSERT_TRUE(blocking_echo(active.get(), 1));
    int exchanges = 1;
    while (!closed_by_peer(idle.get()) && exchanges < 2000) {
        ASSERT_TRUE(blocking_echo(active.get(), 1));
        ++exchanges;
        std::this_thread::sleep_for(10ms);
    }
    ASSERT_TRUE(closed_by_peer(idle.get())) << "the silent client was never closed";
    EXPECT_TRUE(blocking_echo(active.get(), 4096));
    EXPECT_EQ(served.live->idle_closed(), 1u);
    EXPECT_TRUE(l04_echo::eventually([&] { return served.live->clients_connected() == 1; }));
    served.stop();
    EXPECT_EQ(served.after.waiter.waiting, 0u);
}

// A client that sent something and then fell silent is timed out too: the
// deadline is from its last byte, not from its connect.
TEST(L06_IdleTimeout, ClosesAClientThatFallsSilentAfterTalking) {
    ServerThread<TimedEchoServer> served(
        TimedEchoOptions{.port = 0, .quiet = true, .idle_timeout = 100ms});
    fib::UniqueFd client = blocking_socket();
    ASSERT_TRUE(connect_to(client.get(), served.port));
    ASSERT_TRUE(blocking_echo(client.get(), 100));
    char byte;
    EXPECT_EQ(::recv(client.get(), &byte, 1, 0), 0);  // blocks until the server closes
    EXPECT_EQ(served.live->idle_closed(), 1u);
    EXPECT_TRUE(l04_echo::eventually([&] { return served.live->clients_connected() == 0; }));
}

// Datagrams of many sizes, up to near the 64 KiB limit, each come back whole to
// their sender, from two clients; the stop ends serve() with no registration
// left in the Waiter (wait_any dropped the socket's when the stop fired).
TEST(L06_UdpEcho, EveryDatagramComesBackWholeToItsSender) {
    ServerThread<UdpEchoServer> served(EchoOptions{.port = 0, .quiet = true});
    const fib::tcp::Address server = fib::tcp::make_address("127.0.0.1", served.port);
    std::vector<fib::UniqueFd> clients;
    for (int i = 0; i < 2; ++i) {
        clients.emplace_back(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
        const timeval guard{20, 0};  // turns a lost datagram into a failure, not a hang
        ::setsockopt(clients.back().get(), SOL_SOCKET, SO_RCVTIMEO, &guard, sizeof guard);
        ASSERT_EQ(::connect(clients.back().get(), server.get(), server.length), 0);
    }
    std::vector<unsigned char> sent(60000), got(65536);
    std::uint64_t bytes = 0;
    for (std::size_t size : {1ul, 64ul, 1400ul, 9000ul, 32768ul, 60000ul}) {
        for (std::size_t c = 0; c < clients.size(); ++c) {
            for (std::size_t i = 0; i < size; ++i)
                sent[i] = static_cast<unsigned char>(i * 7 + size + c);
            ASSERT_EQ(::send(clients[c].get(), sent.data(), size, 0), static_cast<ssize_t>(size));
            ASSERT_EQ(::recv(clients[c].get(), got.data(), got.size(), 0),
                      static_cast<ssize_t>(size));
            EXPECT_EQ(std::memcmp(got.data(), sent.data(), size), 0)
                << size << " bytes, client " << c;
            bytes += size;
        }
    }
    // The server counts a datagram after its sendto returns, so the last reply can reach us
    // before it is counted: read the counters once serve() has returned.
    served.stop();
    EXPECT_EQ(served.live->datagrams_echoed(), 12u);
    EXPECT_EQ(served.live->bytes_echoed(), bytes);
    EXPECT_EQ(served.after.waiter.waiting, 0u);
}
