// L04_echo_test.cpp — lesson 4: the echo server over real loopback sockets. 200 concurrent
// clients get every byte back; a client that resets mid-write, one that never reads, 5,000
// connect/disconnect cycles, a stop with clients connected and running out of fds leave the
// server serving, with no fd, fiber or stack lost.
#include <gtest/gtest.h>

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <future>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "../lessons/04-echo-server/echo_server.hpp"
#include "fib/condvar.hpp"
#include "fib/fiber.hpp"
#include "fib/io.hpp"
#include "fib/tcp.hpp"
#include "fib/unique_fd.hpp"
#include "fib/waiter.hpp"

namespace {

using Bytes = std::vector<unsigned char>;
constexpr std::size_t kMiB = 1024 * 1024, kChunk = 64 * 1024;

// The server under test, on a thread of its own with its FiberManager and Waiter: serve() runs
// on that thread's main until a byte arrives on the stop pipe. `live` reads the server's atomics
// while it runs; `after` is what serve() left behind, valid once stop() has joined the thread.
struct ServerThread {
    struct After {
        fib::ManagerStats manager;
        fib::WaiterStats waiter;
        std::uint64_t served = 0, echoed = 0;
        std::size_t open = 1;
        bool returned = false;  // serve() came back
    };

    ServerThread() {
        if (::pipe2(stop_pipe, O_CLOEXEC) != 0) std::abort();
        std::promise<EchoServer*> started;
        std::future<EchoServer*> running = started.get_future();
        thread = std::thread([this, started = std::move(started)]() mutable {
            fib::FiberManager manager;
            fib::Waiter waiter;
            EchoServer server({.port = 0, .quiet = true});
            started.set_value(&server);
            server.serve(stop_pipe[0]);
            after = {manager.stats(), waiter.stats(), server.connections_served(),
                     server.bytes_echoed(), server.open_connections(), true};
        });
        live = running.get();
        port = live->port();
    }
    ~ServerThread() {
        stop();
        ::close(stop_pipe[0]);
        ::close(stop_pipe[1]);
    }
    void stop() {
        if (!thread.joinable()) return;
        [[maybe_unused]] ssize_t written = ::write(stop_pipe[1], "x", 1);
        thread.join();
    }

    int stop_pipe[2] = {-1, -1};
    std::thread thread;
    const EchoServer* live = nullptr;
    std::uint16_t port = 0;
    After after;
};

// Bounded polling for state that lives in the server's thread: at most 20 s, then false.
template <class Predicate>
bool eventually(Predicate done) {
    for (int i = 0; i < 20000 && !done(); ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    return done();
}

// `size` random bytes, eight from each draw.
Bytes random_bytes(std::size_t size, std::mt19937_64& random) {
    Bytes bytes(size + 8);
    for (std::size_t at = 0; at < size; at += 8) {
        const std::uint64_t draw = random();
        std::memcpy(&bytes[at], &draw, sizeof draw);
    }
    bytes.resize(size);
    return bytes;
}

// The fds open in this process (not counting the one that lists them).
std::set<int> open_fds() {
    std::set<int> fds;
    DIR* dir = ::opendir("/proc/self/fd");
    while (const dirent* entry = dir ? ::readdir(dir) : nullptr)
        if (entry->d_name[0] != '.' && std::atoi(entry->d_name) != ::dirfd(dir))
            fds.insert(std::atoi(entry->d_name));
    if (dir) ::closedir(dir);
    return fds;
}

// The fd limit that leaves exactly `free` unused fd numbers below it (new fds take the lowest).
rlim_t limit_leaving(int free) {
    const std::set<int> open = open_fds();
    int fd = 0;
    while (open.count(fd) || free-- > 0) ++fd;
    return static_cast<rlim_t>(fd);
}

// From a fiber: reads the echo on `fd` until EOF, checking it byte for byte against `expected`.
bool read_back(int fd, const Bytes& expected) {
    Bytes buffer(kChunk);
    std::size_t have = 0;
    bool same = true;
    ssize_t n;
    while ((n = fib::io::read(fd, buffer.data(), buffer.size())) > 0) {
        const auto got = static_cast<std::size_t>(n);
        same = same && have + got <= expected.size() &&
               std::memcmp(buffer.data(), expected.data() + have, got) == 0;
        have += got;
    }
    return n == 0 && same && have == expected.size();
}

// A client fiber's conversation: connect; a writer fiber sends `payload`, then SHUT_WR, while
// this fiber reads the echo. Reading must go on during the writes, or a large payload fills
// both sides' buffers and client and server deadlock.
bool round_trip(std::uint16_t port, const Bytes& payload) {
    fib::UniqueFd socket = fib::tcp::connect("127.0.0.1", port);
    if (!socket) return false;
    const int fd = socket.get();
    fib::Fiber writer([fd, &payload] {
        for (std::size_t at = 0; at < payload.size(); at += kChunk)
            if (fib::io::send_all(fd, &payload[at], std::min(kChunk, payload.size() - at)) < 0)
                return;
        ::shutdown(fd, SHUT_WR);
    });
    const bool intact = read_back(fd, payload);
    writer.join();
    return intact;
}

// A blocking client socket for the tests without fibers. The timeouts only turn a hang (a
// broken server) into a failed call; no result depends on them.
fib::UniqueFd blocking_socket() {
    fib::UniqueFd socket(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    const timeval guard{60, 0};
    ::setsockopt(socket.get(), SOL_SOCKET, SO_RCVTIMEO, &guard, sizeof guard);
    ::setsockopt(socket.get(), SOL_SOCKET, SO_SNDTIMEO, &guard, sizeof guard);
    return socket;
}

bool connect_to(int socket, std::uint16_t port) {
    const fib::tcp::Address where = fib::tcp::make_address("127.0.0.1", port);
    return ::connect(socket, where.get(), where.length) == 0;
}

// Sends `size` bytes (a few KiB at most: they fit the buffers) and reads them back intact.
bool blocking_echo(int socket, std::size_t size) {
    Bytes sent(size), got(size);
    for (std::size_t i = 0; i < size; ++i) sent[i] = static_cast<unsigned char>(i * 131 + socket);
    if (::send(socket, sent.data(), size, MSG_NOSIGNAL) != static_cast<ssize_t>(size)) return false;
    for (std::size_t have = 0; have < size;) {
        const ssize_t n = ::recv(socket, &got[have], size - have, 0);
        if (n <= 0) return false;
        have += static_cast<std::size_t>(n);
    }
    return got == sent;
}

// The most the kernel grows a TCP socket's buffer to: "tcp_rmem" or "tcp_wmem", third field.
std::size_t kernel_buffer_max(const char* name) {
    std::ifstream file(std::string("/proc/sys/net/ipv4/") + name);
    std::size_t low = 0, initial = 0, most = 0;
    file >> low >> initial >> most;
    return most;
}

TEST(L04_Echo, TwoHundredConcurrentClientsGetEveryByteOfRandomPayloadsBack) {
    ServerThread server;
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
    int intact = 0;
    std::vector<fib::Fiber> clients;
    for (const Bytes& payload : payloads)
        clients.emplace_back([&, port = server.port] { intact += round_trip(port, payload); });
    for (fib::Fiber& client : clients) client.join();
    EXPECT_EQ(intact, 200);
    server.stop();
    EXPECT_EQ(server.after.echoed, total);
    EXPECT_EQ(server.after.served, 200u);
    EXPECT_EQ(server.after.open, 0u);
}

TEST(L04_Echo, ServerSurvivesAClientResettingMidWriteWithoutSigpipe) {
    ServerThread server;
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
    EXPECT_EQ(server.after.open, 0u);
    EXPECT_EQ(server.after.served, 2u);
}

TEST(L04_Echo, ClientThatNeverReadsStallsOnlyItsOwnConnection) {
    ServerThread server;
    fib::FiberManager manager;
    fib::Waiter waiter;
    // A sends more than every buffer on its path can hold (the server's two grow at most to
    // tcp_rmem's and tcp_wmem's maximum; A's own are set to 64 KiB), so A's writer cannot
    // finish before A reads, and the server's fiber for A ends up blocked writing to A.
    const std::size_t size =
        kernel_buffer_max("tcp_rmem") + kernel_buffer_max("tcp_wmem") + 4 * kMiB;
    ASSERT_GT(size, 4 * kMiB);
    std::mt19937_64 random(6);
    const Bytes a_payload = random_bytes(size, random);
    fib::UniqueFd a(::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    const int small = 64 * 1024;
    ::setsockopt(a.get(), SOL_SOCKET, SO_SNDBUF, &small, sizeof small);
    ::setsockopt(a.get(), SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
    const fib::tcp::Address where = fib::tcp::make_address("127.0.0.1", server.port);
    ASSERT_EQ(fib::io::connect(a.get(), where.get(), where.length), 0);
    bool a_stalled = false, a_done = false;
    fib::CondVar a_changed;
    fib::Fiber a_writer([&] {
        for (std::size_t at = 0; at < size;) {
            const ssize_t n =
                ::send(a.get(), &a_payload[at], std::min(kChunk, size - at), MSG_NOSIGNAL);
            if (n < 0 && errno != EAGAIN) return;
            at += n > 0 ? static_cast<std::size_t>(n) : 0;
            if (n > 0) continue;
            a_stalled = true;
            a_changed.notify_all();
            fib::io::wait(a.get(), POLLOUT);
        }
        ::shutdown(a.get(), SHUT_WR);
        a_done = true;
        a_changed.notify_all();
    });
    a_changed.wait([&] { return a_stalled || a_done; });
    EXPECT_TRUE(a_stalled);
    // B: 100 round trips of 1 KiB, each checked, while A's connection is stuck.
    int b_intact = 0;
    for (int trip = 0; trip < 100; ++trip)
        b_intact += round_trip(server.port, random_bytes(1024, random));
    EXPECT_EQ(b_intact, 100);
    EXPECT_FALSE(a_done);
    // Now A reads: its writer finishes, and every byte of A's payload comes back.
    EXPECT_TRUE(read_back(a.get(), a_payload));
    a_writer.join();
    EXPECT_TRUE(a_done);
}

TEST(L04_Echo, FiveThousandConnectDisconnectCyclesLeakNoFdFiberOrStack) {
    ServerThread server;
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
    const ServerThread::After& after = server.after;
    EXPECT_EQ(after.served, 5000u);
    EXPECT_EQ(after.echoed, 2500u);
    // Spawned: the acceptor and one fiber per client, all finished. The one record left is the
    // Waiter's service fiber (released by ~Waiter only), and it holds the one stack not back in
    // the pool; main, which ran serve(), has neither record nor pooled stack.
    EXPECT_EQ(after.manager.spawned, 5001u);
    EXPECT_EQ(after.manager.finished, after.manager.spawned);
    EXPECT_EQ(after.manager.records, 1u);
    EXPECT_EQ(after.manager.stacks_pooled + 1, after.manager.stacks_created);
    EXPECT_EQ(after.waiter.waiting, 0u);
}

TEST(L04_Echo, StopWithIdleClientsConnectedClosesThemAllAndReturns) {
    ServerThread server;
    std::vector<fib::UniqueFd> clients;
    for (int i = 0; i < 10; ++i) {
        clients.push_back(blocking_socket());
        ASSERT_TRUE(connect_to(clients.back().get(), server.port));
    }
    ASSERT_TRUE(eventually([&] { return server.live->open_connections() == 10; }));
    server.stop();
    EXPECT_TRUE(server.after.returned);
    EXPECT_EQ(server.after.open, 0u);
    EXPECT_EQ(server.after.served, 10u);
    for (const fib::UniqueFd& client : clients) {
        char byte;
        const ssize_t n = ::recv(client.get(), &byte, 1, 0);
        EXPECT_TRUE(n == 0 || (n < 0 && errno == ECONNRESET)) << n << " " << std::strerror(errno);
    }
}

[[noreturn]] void fail(const char* what) {
    std::fprintf(stderr, "FAILED: %s\n", what);
    std::_Exit(1);
}

// A death test's child: server and clients share this process's fds. With 8 fds free, 11
// clients connect: 8 are served, 3 wait in the backlog while the acceptor backs off; each
// client that leaves lets one waiting client in. Then, all gone and no fd free, one more
// client is refused through the spare fd. Returns 0 when all went as said.
int run_out_of_fds() {
    ServerThread server;
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
    if (server.live->connections_served() != 11) fail("11 served");
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
    server.stop();
    ::alarm(0);
    ::setrlimit(RLIMIT_NOFILE, &original);
    const ServerThread::After& after = server.after;
    if (!after.returned || after.open != 0 || after.served != 11) fail("after stop");
    return 0;
}

TEST(L04_Echo, RunningOutOfFdsMakesTheServerWaitNotFailAndRefuseOnlyWithNoClient) {
    EXPECT_EXIT(std::exit(run_out_of_fds()), ::testing::ExitedWithCode(0),
                "accept: Too many open files.*out of fds: refused a connection");
}

}  // namespace
