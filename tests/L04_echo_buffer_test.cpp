// L04_echo_buffer_test.cpp — lesson 4: the echo loop's shared read buffer is never used across a
// park. Every client fiber of the server reads into one buffer (SharedReadBuffer); a fiber that
// parked with bytes still in it would have them overwritten by the next client's read, and its
// client would get another client's bytes. Here a client that does not read keeps its server
// fiber parked with a rest to send while other clients push megabytes through the buffer; then
// it reads slowly while more clients do the same. Every client must get exactly its own bytes
// back. The helpers are in tests/L04_echo_harness.hpp.
#include <gtest/gtest.h>

#include <sys/eventfd.h>
#include <unistd.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

#include "../lessons/04-echo-server/echo_connection.hpp"
#include "L04_echo_harness.hpp"
#include "fib/fiber.hpp"
#include "fib/io.hpp"
#include "fib/unique_fd.hpp"
#include "fib/waiter.hpp"

namespace {

using namespace l04_echo;

// Lesson 4's EchoServer, with connections whose send_rest hook counts the fibers parked in it
// and, as each one parks, adds 1 to an eventfd: a test fiber can wait on that like on any fd,
// and so learns, without timing anything, that a server fiber is parked holding a rest.
class RestCountingServer : public EchoServer {
public:
    using EchoServer::EchoServer;
    std::size_t parked_with_rest() const { return parked_.load(); }
    // Returns once the slow client's fiber is parked with a rest, reading the eventfd (a
    // fiber's wait: the client's writer goes on meanwhile) while it is not. A park can end
    // without the client reading: the kernel grows a socket's send buffer as the connection
    // warms up, so a rest it refused a moment ago may go, and the fiber reads and parks again.
    // Once the client's window and the server's grown buffer are full the park lasts (the
    // payload is larger than both); until then the test looks at the park that is current.
    // A server whose fiber never parks leaves this waiting: the watchdog names the test.
    std::size_t parked_now() const {
        while (parked_.load() == 0) {
            std::uint64_t parks = 0;
            if (fib::io::read(parked_event_.get(), &parks, sizeof parks) != 8) break;
        }
        return parked_.load();
    }

protected:
    EchoConnection::Ended echo(int socket) override {
        Connection connection(socket, *this);
        return connection.run();
    }

private:
    class Connection : public EchoConnection {
    public:
        Connection(int socket, RestCountingServer& server)
            : EchoConnection(socket, server.read_buffer(), server.bytes_counter()), server_(server) {}

    protected:
        ssize_t send_rest(const void* rest, std::size_t size) override {
            ++server_.parked_;
            const std::uint64_t one = 1;
            [[maybe_unused]] ssize_t written = ::write(server_.parked_event_.get(), &one, sizeof one);
            const ssize_t sent = EchoConnection::send_rest(rest, size);
            --server_.parked_;
            return sent;
        }

    private:
        RestCountingServer& server_;
    };

    std::atomic<std::size_t> parked_{0};
    fib::UniqueFd parked_event_{::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)};
};

// `count` clients at once, each with its own 1 MiB of random bytes; returns how many got exactly
// their own bytes back. On the server's side, each read of theirs fills the whole 64 KiB buffer.
int echo_clients_at_once(std::uint16_t port, int count, std::mt19937_64& random,
                         std::uint64_t& bytes) {
    std::vector<Bytes> payloads;
    for (int i = 0; i < count; ++i) {
        payloads.push_back(random_bytes(kMiB, random));
        bytes += kMiB;
    }
    return round_trips_at_once(port, payloads);
}

TEST(L04_EchoBuffer, EveryClientGetsItsOwnBytesWhileASlowReadersFiberIsParkedWithARest) {
    ServerThread<RestCountingServer> server(EchoOptions{.port = 0, .quiet = true});
    fib::FiberManager manager;
    fib::Waiter waiter;
    std::mt19937_64 random(7);
    // The slow client sends more than the buffers on its path hold and does not read yet: its
    // server fiber ends up parked in send_rest, holding what the kernel did not take.
    NonReadingClient slow(server.port, random);
    ASSERT_TRUE(slow.connected);
    ASSERT_TRUE(slow.stalls());
    ASSERT_EQ(server.live->parked_now(), 1u);
    // 16 MiB through the shared buffer while that fiber stays parked.
    std::uint64_t bytes = slow.payload.size();
    EXPECT_EQ(echo_clients_at_once(server.port, 16, random, bytes), 16);
    EXPECT_EQ(server.live->parked_now(), 1u);
    // The slow client reads 1 KiB at a time, yielding after each, while 16 more clients run: its
    // server fiber wakes, sends, reads, and parks again with a new rest whenever the kernel
    // takes only part of a send.
    bool slow_intact = false;
    fib::Fiber slow_reader([&] { slow_intact = slow.reads_back(true, 1024); });
    EXPECT_EQ(echo_clients_at_once(server.port, 16, random, bytes), 16);
    slow_reader.join();
    EXPECT_TRUE(slow_intact);
    server.stop();
    EXPECT_EQ(server.live->bytes_echoed(), bytes);
    EXPECT_EQ(server.live->connections_served(), 33u);
}

}  // namespace
