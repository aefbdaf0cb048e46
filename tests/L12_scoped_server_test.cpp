// L12_scoped_server_test.cpp — lesson 12: ScopedServer, lesson 6's FiberServer as a scope of its
// connections. Clients are echoed over real loopback sockets, byte for byte; the stop (one cancel
// of the scope) ends clients parked in a read and returns only after each has ended; a client
// whose handler throws is logged and the others go on; no fiber is left afterwards.
#include <gtest/gtest.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <random>
#include <stdexcept>
#include <vector>

#include "../lessons/12-structured-concurrency/scoped_server.hpp"
#include "L04_echo_harness.hpp"
#include "L04_server_thread.hpp"
#include "fib/io.hpp"
#include "fib/tcp.hpp"
#include "fib/waiter.hpp"

namespace {

using namespace l04_echo;

// A plain echo; a client that sends "throw" makes its handler throw.
class Echo : public ScopedServer {
public:
    Echo() : ScopedServer("scoped_echo", "127.0.0.1", 0) {}
    explicit Echo(fib::UniqueFd listener) : ScopedServer("scoped_echo", std::move(listener)) {}

protected:
    void serve_client(int socket) override {
        char buffer[4096];
        ssize_t got;
        while ((got = fib::io::read(socket, buffer, sizeof buffer)) > 0) {
            if (got == 5 && std::string(buffer, 5) == "throw") throw std::runtime_error("asked to throw");
            if (fib::io::write_all(socket, buffer, static_cast<std::size_t>(got)) < 0) return;
        }
    }
};

// A listener made elsewhere (lesson 9 makes one per thread, SO_REUSEPORT) is served as its own.
TEST(L12_ScopedServer, ServesAListeningSocketMadeElsewhere) {
    fib::FiberManager manager;
    fib::Waiter waiter;
    fib::UniqueFd listener = fib::tcp::listen("127.0.0.1", 0);
    const std::uint16_t port = fib::tcp::local_port(listener.get());
    Echo server(std::move(listener));
    EXPECT_EQ(server.port(), port);
    const fib::UniqueFd stop(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
    std::string echoed(5, '\0');
    fib::scope([&](fib::Scope& both) {
        both.spawn({.name = "server"}, [&] { server.serve(stop.get()); });
        const fib::UniqueFd client = fib::tcp::connect("127.0.0.1", port);
        ASSERT_EQ(fib::io::write_all(client.get(), "hello", 5), 5);
        ASSERT_EQ(fib::io::read(client.get(), echoed.data(), 5), 5);
        const std::uint64_t one = 1;
        ASSERT_EQ(::write(stop.get(), &one, sizeof one), 8);
    });
    EXPECT_EQ(echoed, "hello");
    EXPECT_EQ(server.clients_served(), 1u);
}

TEST(L12_ScopedServer, EchoesEveryByteOfClientsAtOnce) {
    {
        ServerThread<Echo> server;
        fib::FiberManager manager;
        fib::Waiter waiter;
        std::mt19937_64 random(12);
        std::vector<Bytes> payloads;
        for (int i = 0; i < 8; ++i) payloads.push_back(random_bytes(1000 + 50'000 * i, random));
        EXPECT_EQ(round_trips_at_once(server.port, payloads), 8);
        server.stop();
        EXPECT_EQ(server.live->clients_served(), 8u);
        EXPECT_EQ(server.live->clients_connected(), 0u);
        EXPECT_EQ(server.after.manager.records, 0u);
    }
}

// Three clients connected and silent: each handler is parked in its read when the stop comes.
// serve() returns only after all three fibers have ended, and their sockets are closed (the
// clients read EOF).
TEST(L12_ScopedServer, TheStopCancelsClientsParkedInAReadAndWaitsForThem) {
    ServerThread<Echo> server;
    std::vector<fib::UniqueFd> clients;
    for (int i = 0; i < 3; ++i) {
        clients.push_back(blocking_socket());
        ASSERT_TRUE(connect_to(clients.back().get(), server.port));
        ASSERT_TRUE(blocking_echo(clients.back().get(), 10));  // served: its fiber exists
    }
    EXPECT_EQ(server.live->clients_connected(), 3u);
    server.stop();
    EXPECT_EQ(server.live->clients_connected(), 0u);
    for (fib::UniqueFd& client : clients) {
        char byte;
        EXPECT_EQ(::recv(client.get(), &byte, 1, 0), 0);
    }
    EXPECT_EQ(server.after.manager.records, 0u);
}

// One client's exception ends that client only: the scope never sees it.
TEST(L12_ScopedServer, AClientWhoseHandlerThrowsEndsAloneAndTheOthersGoOn) {
    ServerThread<Echo> server;
    fib::UniqueFd good = blocking_socket(), bad = blocking_socket();
    ASSERT_TRUE(connect_to(good.get(), server.port));
    ASSERT_TRUE(connect_to(bad.get(), server.port));
    testing::internal::CaptureStderr();
    ASSERT_EQ(::send(bad.get(), "throw", 5, 0), 5);
    char byte;
    EXPECT_EQ(::recv(bad.get(), &byte, 1, 0), 0);  // its socket was closed
    EXPECT_TRUE(blocking_echo(good.get(), 1000));
    server.stop();
    const std::string log = testing::internal::GetCapturedStderr();
    EXPECT_NE(log.find("asked to throw"), std::string::npos) << log;
    EXPECT_EQ(server.live->clients_served(), 2u);
}

}  // namespace
