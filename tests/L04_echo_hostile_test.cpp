// L04_echo_hostile_test.cpp — lesson 4: the echo server against hostile clients, over real
// loopback sockets. A client that resets mid-write, one that never reads, and running out of
// fds leave the server serving the others, with no SIGPIPE and no connection lost. The helpers
// are in tests/L04_echo_harness.hpp, the out-of-fds scenario in tests/L04_out_of_fds.hpp.
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
#include "L04_out_of_fds.hpp"
#include "fib/fiber.hpp"
#include "fib/io.hpp"
#include "fib/tcp.hpp"
#include "fib/unique_fd.hpp"
#include "fib/waiter.hpp"

namespace {

using namespace l04_echo;

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

TEST(L04_Echo, RunningOutOfFdsMakesTheServerWaitNotFailAndRefuseOnlyWithNoClient) {
    EXPECT_EXIT(std::exit(run_out_of_fds<EchoServerThread>()), ::testing::ExitedWithCode(0),
                "accept: Too many open files.*out of fds: refused a connection");
}

}  // namespace
