// L04_echo_hostile_test.cpp — lesson 4: the echo server against hostile clients, over real
// loopback sockets. A client that resets mid-write, one that never reads, and running out of
// fds leave the server serving the others, with no SIGPIPE and no connection lost. The helpers
// are in tests/L04_echo_harness.hpp.
#include <gtest/gtest.h>

#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <set>
#include <vector>

#include "L04_echo_harness.hpp"
#include "fib/fiber.hpp"
#include "fib/io.hpp"
#include "fib/tcp.hpp"
#include "fib/unique_fd.hpp"
#include "fib/waiter.hpp"

namespace {

using namespace l04_echo;

// The fd limit that leaves exactly `free` unused fd numbers below it (new fds take the lowest).
rlim_t limit_leaving(int free) {
    const std::set<int> open = open_fds();
    int fd = 0;
    while (open.count(fd) || free-- > 0) ++fd;
    return static_cast<rlim_t>(fd);
}

TEST(L04_Echo, ServerSurvivesAClientResettingMidWriteWithoutSigpipe) {
    EchoServerThread server;
    fib::FiberManager manager;
    fib::Waiter waiter;
    std::mt19937_64 random(5);
    const Bytes mib = random_bytes(kMiB, random);
    {
        fib::UniqueFd resetter = fib::tcp::connect("127.0.0.1", server.port);
        ASSERT_TRUE(resetter);
        // Up to 1 MiB, never reading; it stops early if the buffers fill (the server is then
        // blocked writing to us). Once an echo arrives the server is in its echo loop: reset.
        std::size_t sent = 0;
        for (ssize_t n = 0; sent < mib.size() && n >= 0; sent += n > 0 ? n : 0)
            n = ::send(resetter.get(), &mib[sent], mib.size() - sent, MSG_NOSIGNAL);
        ASSERT_GT(sent, 0u);
        fib::io::wait(resetter.get(), POLLIN);
        const linger reset{1, 0};
        ASSERT_EQ(::setsockopt(resetter.get(), SOL_SOCKET, SO_LINGER, &reset, sizeof reset), 0);
    }
    // The process is still alive (no SIGPIPE), the reset client's fiber ends, and a new
    // client is served.
    EXPECT_TRUE(round_trip(server.port, Bytes(mib.begin(), mib.begin() + 64 * 1024)));
    EXPECT_TRUE(eventually([&] { return server.live->open_connections() == 0; }));
    server.stop();
    EXPECT_TRUE(server.after.returned);
    EXPECT_EQ(server.live->open_connections(), 0u);
    EXPECT_EQ(server.live->connections_served(), 2u);
}

TEST(L04_Echo, ClientThatNeverReadsStallsOnlyItsOwnConnection) {
    EchoServerThread server;
    fib::FiberManager manager;
    fib::Waiter waiter;
    std::mt19937_64 random(6);
    // A sends more than every buffer on its path holds, so the server's fiber for A ends up
    // blocked writing to A (see NonReadingClient).
    NonReadingClient a(server.port, random);
    ASSERT_TRUE(a.connected);
    ASSERT_TRUE(a.stalls());
    // B: 100 round trips of 1 KiB, each checked, while A's connection is stuck.
    int b_intact = 0;
    for (int trip = 0; trip < 100; ++trip)
        b_intact += round_trip(server.port, random_bytes(1024, random));
    EXPECT_EQ(b_intact, 100);
    EXPECT_FALSE(a.done);
    // Now A reads: its writer finishes, and every byte of A's payload comes back.
    EXPECT_TRUE(a.reads_back());
}

[[noreturn]] void fail(const char* what) {
    std::fprintf(stderr, "FAILED: %s\n", what);
    std::_Exit(1);
}

// A death test's child: server and clients share this process's fds. After a first client,
// with 8 fds free, 11 clients connect: 8 are served, 3 wait in the backlog while the acceptor
// backs off; each client that leaves lets one waiting client in. Then, all gone and no fd
// free, one more client is refused through the spare fd. Returns 0 when all went as said.
int run_out_of_fds() {
    EchoServerThread server;
    // One client is served before the fds run out. Under UBSan the first use of each class with
    // a vtable (the server's EchoConnection) checks its vtable through a pipe, which cannot be
    // made once they are out (see L04_server_thread.hpp): it would report an "invalid vptr".
    {
        fib::UniqueFd first = blocking_socket();
        if (!connect_to(first.get(), server.port) || !blocking_echo(first.get(), 1)) fail("first");
    }
    if (!eventually([&] { return server.live->open_connections() == 0; })) fail("first left");
    rlimit original{};
    ::getrlimit(RLIMIT_NOFILE, &original);
    std::vector<fib::UniqueFd> clients;
    for (int i = 0; i < 12; ++i) clients.push_back(blocking_socket());
    rlimit lowered = original;
    lowered.rlim_cur = limit_leaving(8);
    if (::setrlimit(RLIMIT_NOFILE, &lowered) != 0) fail("setrlimit");
    for (int i = 0; i < 11; ++i)
        if (!connect_to(clients[i].get(), server.port)) fail("connect");
    if (!eventually([&] { return server.live->open_connections() == 8; })) fail("8 open");
    for (int i = 0; i < 8; ++i)
        if (!blocking_echo(clients[i].get(), 1024)) fail("echo while out of fds");
    for (int i = 0; i < 3; ++i) {
        // shutdown, not close: the client's own fd must not free a slot for the server.
        ::shutdown(clients[i].get(), SHUT_RDWR);
        if (!blocking_echo(clients[8 + i].get(), 1024)) fail("echo of a client let in");
    }
    if (server.live->connections_served() != 12) fail("12 served");
    for (int i = 3; i < 11; ++i) ::shutdown(clients[i].get(), SHUT_RDWR);
    if (!eventually([&] { return server.live->open_connections() == 0; })) fail("0 open");
    lowered.rlim_cur = limit_leaving(0);
    if (::setrlimit(RLIMIT_NOFILE, &lowered) != 0) fail("setrlimit");
    if (!connect_to(clients[11].get(), server.port)) fail("connect");
    char byte;
    const ssize_t n = ::recv(clients[11].get(), &byte, 1, 0);
    if (n != 0 && !(n < 0 && errno == ECONNRESET)) fail("refused client");
    // Stop while still out of fds with no client: the acceptor must be waiting for a
    // connection, not retrying accept() in a loop that never lets serve() see the stop.
    // alarm() bounds it: a hang kills the child, and the test fails.
    ::alarm(20);
    server.stop_serving();
    ::alarm(0);
    ::setrlimit(RLIMIT_NOFILE, &original);
    server.stop();  // the thread's teardown, with fds to spare (see L04_server_thread.hpp)
    if (!server.after.returned || server.live->open_connections() != 0 ||
        server.live->connections_served() != 12)
        fail("after stop");
    return 0;
}

TEST(L04_Echo, RunningOutOfFdsMakesTheServerWaitNotFailAndRefuseOnlyWithNoClient) {
    EXPECT_EXIT(std::exit(run_out_of_fds()), ::testing::ExitedWithCode(0),
                "accept: Too many open files.*out of fds: refused a connection");
}

}  // namespace
