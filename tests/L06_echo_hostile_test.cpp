// L06_echo_hostile_test.cpp — lesson 6: echo clients that try to hold TimedEchoServer. One that
// sends megabytes and never reads is closed by the write deadline, and so is one that reads a
// byte at a time; one that resets mid-write costs nothing but itself; a stop while fibers are
// blocked sending (no deadline in sight) cancels them. Only outcomes are checked: who was
// closed, the counters, the bytes.
#include <gtest/gtest.h>
#include <sys/socket.h>

#include <cerrno>
#include <chrono>
#include <random>
#include <vector>

#include "../lessons/06-time-and-events/timed_echo_server.hpp"
#include "L04_echo_harness.hpp"
#include "L04_server_thread.hpp"
#include "fib/fiber.hpp"
#include "fib/timer.hpp"
#include "fib/wait_any.hpp"

using namespace std::chrono_literals;
using l04_echo::Bytes;
using l04_echo::kMiB;

namespace {

struct TimedEchoThread : ServerThread<TimedEchoServer> {
    explicit TimedEchoThread(TimedEchoOptions options) : ServerThread(options) {}
};

// A non-blocking client with a small receive buffer, so the server's sends to it stall soon.
fib::UniqueFd small_window_client(std::uint16_t port) {
    fib::UniqueFd socket(::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    const int receive_buffer = 4096;
    ::setsockopt(socket.get(), SOL_SOCKET, SO_RCVBUF, &receive_buffer, sizeof receive_buffer);
    const fib::tcp::Address where = fib::tcp::make_address("127.0.0.1", port);
    if (fib::io::connect(socket.get(), where.get(), where.length) != 0) socket.reset();
    return socket;
}

// Sends `limit` bytes at most, 64 KiB at a time, until a send fails (the server closed the
// connection); the bytes sent.
std::size_t send_until_closed(int socket, std::size_t limit) {
    const Bytes chunk(l04_echo::kChunk, 'x');
    std::size_t sent = 0;
    while (sent < limit && fib::io::send_all(socket, chunk.data(), chunk.size(), 20s) >= 0)
        sent += chunk.size();
    return sent;
}

// The client sends and never reads. Its echoes fill both sides' buffers; the server's fiber
// then waits to send the rest, meets the write deadline, and closes the connection, so the
// client's sends fail long before 1 GB.
TEST(L06_EchoHostile, AClientThatSendsMegabytesAndNeverReadsIsClosedByTheWriteDeadline) {
    TimedEchoThread server({.port = 0, .quiet = true, .write_timeout = 200ms});
    fib::FiberManager manager;
    fib::Waiter waiter;
    fib::UniqueFd client = small_window_client(server.port);
    ASSERT_TRUE(client);
    EXPECT_LT(send_until_closed(client.get(), 1024 * kMiB), 1024 * kMiB);
    server.stop();
    EXPECT_EQ(server.live->slow_closed(), 1u);
    EXPECT_EQ(server.live->idle_closed(), 0u);
    EXPECT_EQ(server.after.manager.records, 0u);
}

// One byte every 50 ms: far too slow for a megabyte's echo within the deadline, so the client
// is closed, and finds only what its own small buffer held. (Here the close is a reset either
// way: the server leaves the client's bytes unread in its socket. The chat test
// L06_ChatHostile.AClientReadingAByteAtATimeIsClosedByTheWriteDeadline is the one where the
// explicit reset is all that keeps the client from reading on for megabytes. The reset's
// ECONNRESET goes to whichever call comes first, often the sending fiber's; a read after it
// sees the end of the stream.)
TEST(L06_EchoHostile, AClientReadingAByteAtATimeIsClosedByTheWriteDeadline) {
    TimedEchoThread server({.port = 0, .quiet = true, .write_timeout = 300ms});
    fib::FiberManager manager;
    fib::Waiter waiter;
    fib::UniqueFd client = small_window_client(server.port);
    ASSERT_TRUE(client);
    auto closed = [&] { return server.live->slow_closed() == 1; };
    fib::Fiber sending([&] { send_until_closed(client.get(), 64 * kMiB); });
    fib::Fiber trickling([&] {
        char byte = 0;
        for (int i = 0; i < 2000 && !closed(); ++i) {
            if (fib::io::read(client.get(), &byte, 1, 20s) != 1) return;
            fib::sleep_for(50ms);
        }
    });
    sending.join();
    trickling.join();
    ASSERT_TRUE(closed());
    std::size_t left_over = 0;
    char chunk[4096];
    ssize_t n = 0;
    while ((n = fib::io::read(client.get(), chunk, sizeof chunk, 20s)) > 0)
        left_over += static_cast<std::size_t>(n);
    EXPECT_TRUE(n == 0 || errno == ECONNRESET);
    EXPECT_LT(left_over, 256u * 1024);
    server.stop();
    EXPECT_EQ(server.live->slow_closed(), 1u);
}

// A client sends 4 MiB and resets (SO_LINGER 0) while its echo is still coming back; a second
// client then gets 1 MiB back byte for byte, and the stop finds no fiber left over.
TEST(L06_EchoHostile, AClientThatResetsMidWriteCostsOnlyItself) {
    TimedEchoThread server({.port = 0, .quiet = true});
    fib::FiberManager manager;
    fib::Waiter waiter;
    {
        fib::UniqueFd rude = small_window_client(server.port);
        ASSERT_TRUE(rude);
        fib::Fiber sending([&] { send_until_closed(rude.get(), 4 * kMiB); });
        char some[1000];
        ASSERT_GT(fib::io::read(rude.get(), some, sizeof some, 20s), 0);  // the echo has begun
        const linger reset{1, 0};
        ::setsockopt(rude.get(), SOL_SOCKET, SO_LINGER, &reset, sizeof reset);
        ::shutdown(rude.get(), SHUT_RD);  // ends the sending fiber's wait too
        sending.cancel();
        sending.join();
    }
    std::mt19937_64 random(7);
    EXPECT_TRUE(l04_echo::round_trip(server.port, l04_echo::random_bytes(kMiB, random)));
    server.stop();
    EXPECT_EQ(server.live->clients_served(), 2u);
    EXPECT_EQ(server.live->clients_connected(), 0u);
    EXPECT_EQ(server.after.manager.records, 0u);
    EXPECT_EQ(server.after.waiter.waiting, 0u);
}

// With no deadline near, eight clients that never read hold eight fibers blocked sending when
// the stop comes: the cancel ends each send, and serve() returns with every fiber gone.
TEST(L06_EchoHostile, AStopCancelsFibersBlockedSendingAndServeReturns) {
    TimedEchoThread server({.port = 0, .quiet = true, .write_timeout = 1h});
    fib::FiberManager manager;
    fib::Waiter waiter;
    std::vector<fib::UniqueFd> clients;
    for (int i = 0; i < 8; ++i) {
        clients.push_back(small_window_client(server.port));
        ASSERT_TRUE(clients.back());
    }
    // Each client sends until its own sends stall: its server fiber is blocked sending the echo
    // and reads no more.
    const Bytes chunk(l04_echo::kChunk, 'y');
    for (fib::UniqueFd& client : clients) {
        for (int i = 0; i < 1000; ++i) {
            const fib::Ready room = fib::io::wait(client.get(), POLLOUT, 200ms);
            if (room.timed_out()) break;
            ASSERT_GT(::send(client.get(), chunk.data(), chunk.size(), MSG_NOSIGNAL | MSG_DONTWAIT),
                      0);
        }
    }
    server.stop();
    EXPECT_TRUE(server.after.returned);
    EXPECT_EQ(server.live->clients_connected(), 0u);
    EXPECT_EQ(server.live->slow_closed(), 0u);
    EXPECT_EQ(server.after.manager.records, 0u);
    EXPECT_EQ(server.after.waiter.waiting, 0u);
}

}  // namespace
