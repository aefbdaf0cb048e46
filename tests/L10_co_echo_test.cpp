// L10_co_echo_test.cpp — lesson 10: lesson 4's echo tests, against CoEchoServer, the echo server
// as tasks. The same clients (tests/L04_echo_harness.hpp) over real loopback sockets: 200 at
// once with random payloads; two clients ready in one turn; 5,000 connect/disconnect cycles
// that must leave no fd and no task; a stop with clients connected; a client that resets mid-write, one that never reads,
// a slow reader whose task holds a rest while others push megabytes through the shared buffer;
// and running out of fds.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>
#include <random>
#include <vector>

#include "../lessons/10-coroutines/co_echo_server.hpp"
#include "L04_echo_harness.hpp"
#include "L04_out_of_fds.hpp"
#include "L04_server_thread.hpp"
#include "fib/fiber.hpp"
#include "fib/unique_fd.hpp"
#include "fib/waiter.hpp"

namespace {

using namespace l04_echo;

struct CoEchoThread : ServerThread<CoEchoServer> {
    CoEchoThread() : ServerThread(EchoOptions{.port = 0, .quiet = true}) {}
};

TEST(L10_CoEcho, TwoHundredConcurrentClientsGetEveryByteOfRandomPayloadsBack) {
    CoEchoThread server;
    fib::FiberManager manager;
    fib::Waiter waiter;
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

TEST(L10_CoEcho, FiveThousandConnectDisconnectCyclesLeakNoFdAndNoTask) {
    CoEchoThread server;
    const std::size_t fds_before = open_fds().size();
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
    // The acceptor and one task per client; every client's task had ended before the stop.
    const fib::ExecutorStats tasks = server.live->executor_stats();
    EXPECT_EQ(tasks.spawned, 5001u);
    EXPECT_EQ(tasks.tasks, 0u);
    EXPECT_EQ(server.after.waiter.waiting, 0u);
    EXPECT_EQ(server.after.manager.records, 0u);
}

TEST(L10_CoEcho, StopWithIdleClientsConnectedDestroysTheirTasksAndClosesThem) {
    CoEchoThread server;
    std::vector<fib::UniqueFd> clients;
    for (int i = 0; i < 10; ++i) {
        clients.push_back(blocking_socket());
        ASSERT_TRUE(connect_to(clients.back().get(), server.port));
    }
    ASSERT_TRUE(eventually([&] { return server.live->open_connections() == 10; }));
    server.stop();
    EXPECT_TRUE(server.after.returned);
    EXPECT_EQ(server.live->open_connections(), 0u);
    EXPECT_EQ(server.after.waiter.waiting, 0u);
    for (const fib::UniqueFd& client : clients) {
        char byte;
        const ssize_t n = ::recv(client.get(), &byte, 1, 0);
        EXPECT_TRUE(n == 0 || (n < 0 && errno == ECONNRESET)) << n << " " << std::strerror(errno);
    }
}

TEST(L10_CoEcho, ServerSurvivesAClientResettingMidWriteWithoutSigpipe) {
    CoEchoThread server;
    fib::FiberManager manager;
    fib::Waiter waiter;
    std::mt19937_64 random(5);
    const Bytes mib = random_bytes(kMiB, random);
    {
        fib::UniqueFd resetter = fib::tcp::connect("127.0.0.1", server.port);
        ASSERT_TRUE(resetter);
        std::size_t sent = 0;
        for (ssize_t n = 0; sent < mib.size() && n >= 0; sent += n > 0 ? n : 0)
            n = ::send(resetter.get(), &mib[sent], mib.size() - sent, MSG_NOSIGNAL);
        ASSERT_GT(sent, 0u);
        fib::io::wait(resetter.get(), POLLIN);
        const linger reset{1, 0};
        ASSERT_EQ(::setsockopt(resetter.get(), SOL_SOCKET, SO_LINGER, &reset, sizeof reset), 0);
    }
    EXPECT_TRUE(round_trip(server.port, Bytes(mib.begin(), mib.begin() + 64 * 1024)));
    EXPECT_TRUE(eventually([&] { return server.live->open_connections() == 0; }));
    server.stop();
    EXPECT_EQ(server.live->connections_served(), 2u);
}

// The slow client's task is suspended in send_rest, holding its rest, while 16 clients push
// 16 MiB through the one shared read buffer; then it reads 1 KiB at a time while 16 more do.
// A co_await between the read into the shared buffer and the copy of the rest would hand the
// slow client other clients' bytes.
TEST(L10_CoEcho, ClientThatNeverReadsStallsOnlyItsOwnTaskAndGetsOnlyItsOwnBytes) {
    CoEchoThread server;
    fib::FiberManager manager;
    fib::Waiter waiter;
    std::mt19937_64 random(6);
    NonReadingClient slow(server.port, random);
    ASSERT_TRUE(slow.connected);
    ASSERT_TRUE(slow.stalls());
    std::uint64_t bytes = slow.payload.size();
    std::vector<Bytes> first, second;
    for (int i = 0; i < 16; ++i) {
        first.push_back(random_bytes(kMiB, random));
        second.push_back(random_bytes(kMiB, random));
        bytes += 2 * kMiB;
    }
    EXPECT_EQ(round_trips_at_once(server.port, first), 16);
    EXPECT_FALSE(slow.done);
    bool slow_intact = false;
    fib::Fiber slow_reader([&] { slow_intact = slow.reads_back(true, 1024); });
    EXPECT_EQ(round_trips_at_once(server.port, second), 16);
    slow_reader.join();
    EXPECT_TRUE(slow_intact);
    server.stop();
    EXPECT_EQ(server.live->bytes_echoed(), bytes);
    EXPECT_EQ(server.live->connections_served(), 33u);
}

// Server and clients on this one thread: both clients' bytes are in the kernel before the
// server runs, so one turn of the Waiter finds both sockets readable and the Executor resumes
// both tasks in one pass. Each task's read fills the shared buffer; if a task gave the thread
// up before sending (a co_await there), the other task's read would overwrite it first.
TEST(L10_CoEcho, TwoClientsReadyInOneTurnEachGetOnlyTheirOwnBytes) {
    fib::FiberManager manager;
    fib::Waiter waiter;
    CoEchoServer server({.port = 0, .quiet = true});
    int stop[2];
    ASSERT_EQ(::pipe2(stop, O_CLOEXEC), 0);
    const fib::UniqueFd stop_read(stop[0]), stop_write(stop[1]);
    fib::Fiber serving([&] { server.serve(stop_read.get()); });
    fib::UniqueFd a = fib::tcp::connect("127.0.0.1", server.port());
    fib::UniqueFd b = fib::tcp::connect("127.0.0.1", server.port());
    ASSERT_TRUE(a && b);
    for (int turn = 0; turn < 1000 && server.open_connections() < 2; ++turn) fib::this_fiber::yield();
    ASSERT_EQ(server.open_connections(), 2u);
    const Bytes from_a(1000, 'a'), from_b(1000, 'b');
    ASSERT_EQ(fib::io::send_all(a.get(), from_a.data(), from_a.size()), 1000);
    ASSERT_EQ(fib::io::send_all(b.get(), from_b.data(), from_b.size()), 1000);
    ::shutdown(a.get(), SHUT_WR);
    ::shutdown(b.get(), SHUT_WR);
    EXPECT_TRUE(read_back(a.get(), from_a));
    EXPECT_TRUE(read_back(b.get(), from_b));
    fib::io::write_all(stop_write.get(), "x", 1);
    serving.join();
}

// Lesson 4's scenario (tests/L04_out_of_fds.hpp), against the tasks: the acceptor waits for
// a client to leave on a co::Event, and refuses through the spare fd when none is there.
TEST(L10_CoEcho, RunningOutOfFdsMakesTheServerWaitNotFailAndRefuseOnlyWithNoClient) {
    EXPECT_EXIT(std::exit(run_out_of_fds<CoEchoThread>()), ::testing::ExitedWithCode(0),
                "accept: Too many open files.*out of fds: refused a connection");
}

}  // namespace
