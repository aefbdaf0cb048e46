// L04_connection_bench.cpp — make bench, lesson 4: resident memory per idle connection.
//
//   conn_rss   10,000 idle connections to an echo server running in a child
//              process (fork): growth of the child's RSS, divided by 10,000.
//              Each connection echoed one byte first, so the read and write
//              paths of its fiber have both touched their stack pages.
// Kernel memory (socket buffers, page tables) is not in RSS and not counted.
#include <fcntl.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "../../lessons/04-echo-server/echo_server.hpp"
#include "bench.hpp"
#include "fib/tcp.hpp"
#include "fib/waiter.hpp"

namespace bench {
namespace {

constexpr int kMemoryRepetitions = 5;
constexpr long kConnections = 10'000;

[[noreturn]] void die(const char* what) {
    std::perror(what);
    std::exit(1);
}

// The child: an echo server on a free port, which it reports through `port_fd`.
[[noreturn]] void serve_in_child(int port_fd, int stop_fd) {
    fib::FiberManager manager;
    fib::Waiter waiter;
    EchoServer server({.port = 0, .quiet = true});
    const std::uint16_t port = server.port();
    if (::write(port_fd, &port, sizeof port) != sizeof port) std::_Exit(1);
    server.serve(stop_fd);
    std::_Exit(0);
}

// A blocking client connection.
int connect_only(std::uint16_t port) {
    const fib::tcp::Address address = fib::tcp::make_address("127.0.0.1", port);
    const int socket = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (socket < 0 || ::connect(socket, address.get(), address.length) < 0) die("bench: connect");
    return socket;
}

// Sends one byte on each of sockets[first..], then reads each echo back.
void echo_one_byte(const std::vector<int>& sockets, std::size_t first) {
    char byte = 'x';
    for (std::size_t i = first; i < sockets.size(); ++i)
        if (::send(sockets[i], &byte, 1, MSG_NOSIGNAL) != 1) die("bench: send");
    for (std::size_t i = first; i < sockets.size(); ++i)
        if (::recv(sockets[i], &byte, 1, MSG_WAITALL) != 1) die("bench: echo");
}

// One repetition: a fresh server process, one warm-up connection, then the
// rest in batches: connect a batch, send a byte on each, read each echo. (One
// connection at a time would cost the poll Waiter a pass over every fd per
// connection: 10,000 x 10,000 fd checks. Batches let each poll() find many.)
double rss_per_idle_connection() {
    int port_pipe[2], stop_pipe[2];
    if (::pipe2(port_pipe, O_CLOEXEC) < 0 || ::pipe2(stop_pipe, O_CLOEXEC) < 0) die("bench: pipe2");
    const pid_t child = ::fork();
    if (child < 0) die("bench: fork");
    if (child == 0) serve_in_child(port_pipe[1], stop_pipe[0]);
    std::uint16_t port = 0;
    if (::read(port_pipe[0], &port, sizeof port) != sizeof port) die("bench: server port");
    std::vector<int> sockets{connect_only(port)};
    echo_one_byte(sockets, 0);
    const long before = resident_bytes(child);
    constexpr long kBatch = 500;
    for (long batch = 0; batch < kConnections; batch += kBatch) {
        const std::size_t first = sockets.size();
        for (long i = 0; i < kBatch; ++i) sockets.push_back(connect_only(port));
        echo_one_byte(sockets, first);
    }
    const long after = resident_bytes(child);
    for (int socket : sockets) ::close(socket);
    if (::write(stop_pipe[1], "x", 1) != 1) die("bench: stop");
    ::waitpid(child, nullptr, 0);
    for (int fd : {port_pipe[0], port_pipe[1], stop_pipe[0], stop_pipe[1]}) ::close(fd);
    return static_cast<double>(after - before) / kConnections;
}

// Client and server each hold one fd per connection: lift the soft limit.
bool raise_fd_limit(long needed) {
    rlimit limit{};
    ::getrlimit(RLIMIT_NOFILE, &limit);
    limit.rlim_cur = limit.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &limit);
    return static_cast<long>(limit.rlim_cur) >= needed;
}

void connection_costs(std::vector<Figure>& figures) {
    std::vector<double> per_connection;
    if (!raise_fd_limit(kConnections + 100)) {
        std::printf("conn_rss skipped: %ld connections need a hard RLIMIT_NOFILE above %ld\n",
                    kConnections, kConnections + 100);
        return;
    }
    for (int i = 0; i < kMemoryRepetitions; ++i) per_connection.push_back(rss_per_idle_connection());
    Figure connection{"conn_rss", summarize(per_connection), "bytes"};
    connection.repetitions = kMemoryRepetitions;
    connection.compared = std::to_string(kConnections) + " idle echo connections, one fiber each";
    connection.result_extra = " conns=" + std::to_string(kConnections);
    figures.push_back(connection);
}

[[maybe_unused]] const bool registered[] = {
    add(Section{"connections", 4, true, connection_costs}),
    add(Target{"conn_rss, bytes per idle connection (<= 16384)", "conn_rss", nullptr, false, 16384}),
};

}  // namespace
}  // namespace bench
