// L06_fiber_server_test.cpp — lesson 6: FiberServer's stop when its own fiber is cancelled. The
// clients use the server, so serve() must not return before the last has gone, even when the
// cancel that stopped it would end its wait for them (it is shielded). And a server on a
// listening socket its caller made, with options of the caller's own.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <system_error>

#include "../lessons/06-time-and-events/fiber_server.hpp"
#include "fib/cancel.hpp"
#include "fib/fiber.hpp"
#include "fib/io.hpp"
#include "fib/tcp.hpp"
#include "fib/timer.hpp"
#include "fib/waiter.hpp"

namespace {

using namespace std::chrono_literals;

// A client whose fiber, once cancelled, takes a while to clean up, in a wait of its own that
// nothing must cut short; it notes when it has left.
class SlowToLeave : public FiberServer {
public:
    SlowToLeave() : FiberServer("slow_to_leave", "127.0.0.1", 0) {}
    int left = 0;

protected:
    void serve_client(int socket) override {
        char byte;
        fib::io::read(socket, &byte, 1);  // until the stop's cancel
        const fib::CancelShield cleaning_up;
        fib::sleep_for(20ms);
        ++left;
    }
};

TEST(L06_FiberServer, ACancelledServeReturnsOnlyOnceEveryClientHasLeft) {
    fib::FiberManager manager;
    fib::Waiter waiter;
    SlowToLeave server;
    int pipe_fds[2];
    ASSERT_EQ(::pipe2(pipe_fds, O_CLOEXEC), 0);
    fib::UniqueFd stop_read(pipe_fds[0]), stop_write(pipe_fds[1]);
    int left_when_serve_returned = -1;
    bool serve_threw = false;
    fib::Fiber serving({.name = "serving"}, [&] {
        try {
            server.serve(stop_read.get());
        } catch (const std::system_error&) {
            serve_threw = true;
        }
        left_when_serve_returned = server.left;
    });
    // A client of the server's own thread: a loopback connect completes in the kernel.
    fib::UniqueFd client(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(server.port());
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(::connect(client.get(), reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
    for (int turns = 0; turns < 1000 && server.clients_connected() == 0; ++turns) fib::this_fiber::yield();
    ASSERT_EQ(server.clients_connected(), 1u);
    for (int turns = 0; turns < 10; ++turns) fib::this_fiber::yield();  // the client reads
    serving.cancel();
    serving.join();
    EXPECT_FALSE(serve_threw);
    EXPECT_EQ(left_when_serve_returned, 1);
}

// Says hello and hangs up.
class Greeter : public FiberServer {
public:
    explicit Greeter(fib::UniqueFd listener) : FiberServer("greeter", std::move(listener)) {}

protected:
    void serve_client(int socket) override { fib::io::send_all(socket, "hello", 5); }
};

TEST(L06_FiberServer, ServesAListenerItsCallerMade) {
    fib::FiberManager manager;
    fib::Waiter waiter;
    fib::UniqueFd listener = fib::tcp::listen("127.0.0.1", 0);
    const std::uint16_t port = fib::tcp::local_port(listener.get());
    Greeter server(std::move(listener));
    EXPECT_EQ(server.port(), port);
    int pipe_fds[2];
    ASSERT_EQ(::pipe2(pipe_fds, O_CLOEXEC), 0);
    fib::UniqueFd stop_read(pipe_fds[0]), stop_write(pipe_fds[1]);
    fib::Fiber serving({.name = "serving"}, [&] { server.serve(stop_read.get()); });
    fib::UniqueFd client(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(port);
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(::connect(client.get(), reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
    ASSERT_EQ(::fcntl(client.get(), F_SETFL, O_NONBLOCK), 0);  // so io::read parks this fiber
    char reply[8] = {};
    std::size_t got = 0;
    while (got < 5) {
        const ssize_t n = fib::io::read(client.get(), reply + got, sizeof reply - got);
        ASSERT_GT(n, 0);
        got += static_cast<std::size_t>(n);
    }
    EXPECT_STREQ(reply, "hello");
    ASSERT_EQ(::write(stop_write.get(), "x", 1), 1);
    serving.join();
    EXPECT_EQ(server.clients_served(), 1u);
}

}  // namespace
