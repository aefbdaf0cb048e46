// L04_idle_connections.hpp — make bench, lesson 4: resident memory per idle connection of an echo
// server in a child process. Lesson 4's conn_rss row measures EchoServer with it; a later
// lesson's row may measure another server class that has the same constructor, port() and
// serve(stop_fd).
//
// One repetition: a fresh server process (fork), one warm-up connection, then the rest in
// batches: connect a batch, send a byte on each, read each echo (so the read and write paths
// have both run once per connection). The result is the growth of the child's RSS, divided
// by the connections. Kernel memory (socket buffers, page tables) is not in RSS.
#pragma once

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "../../lessons/04-echo-server/echo_server.hpp"
#include "bench.hpp"
#include "fib/tcp.hpp"
#include "fib/waiter.hpp"

namespace bench::idle {

[[noreturn]] inline void die(const char* what) {
    std::perror(what);
    std::exit(1);
}

// The child: a Server on a free port, which it reports through `port_fd`.
template <class Server>
[[noreturn]] void serve_in_child(int port_fd, int stop_fd) {
    fib::FiberManager manager;
    fib::Waiter waiter;
    Server server(EchoOptions{.port = 0, .quiet = true});
    const std::uint16_t port = server.port();
    if (::write(port_fd, &port, sizeof port) != sizeof port) std::_Exit(1);
    server.serve(stop_fd);
    std::_Exit(0);
}

// A blocking client connection.
inline int connect_only(std::uint16_t port) {
    const fib::tcp::Address address = fib::tcp::make_address("127.0.0.1", port);
    const int socket = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (socket < 0 || ::connect(socket, address.get(), address.length) < 0) die("bench: connect");
    return socket;
}

// Sends one byte on each of sockets[first..], then reads each echo back.
inline void echo_one_byte(const std::vector<int>& sockets, std::size_t first) {
    char byte = 'x';
    for (std::size_t i = first; i < sockets.size(); ++i)
        if (::send(sockets[i], &byte, 1, MSG_NOSIGNAL) != 1) die("bench: send");
    for (std::size_t i = first; i < sockets.size(); ++i)
        if (::recv(sockets[i], &byte, 1, MSG_WAITALL) != 1) die("bench: echo");
}

// Batches, not one connection at a time: that would cost the poll Waiter a
// pass over every fd per connection (10,000 x 10,000 fd checks); a batch lets
// each poll() find many.
template <class Server>
double rss_per_idle_connection(long connections) {
    int port_pipe[2], stop_pipe[2];
    if (::pipe2(port_pipe, O_CLOEXEC) < 0 || ::pipe2(stop_pipe, O_CLOEXEC) < 0) die("bench: pipe2");
    const pid_t child = ::fork();
    if (child < 0) die("bench: fork");
    if (child == 0) serve_in_child<Server>(port_pipe[1], stop_pipe[0]);
    std::uint16_t port = 0;
    if (::read(port_pipe[0], &port, sizeof port) != sizeof port) die("bench: server port");
    std::vector<int> sockets{connect_only(port)};
    echo_one_byte(sockets, 0);
    const long before = resident_bytes(child);
    constexpr long kBatch = 500;
    for (long batch = 0; batch < connections; batch += kBatch) {
        const std::size_t first = sockets.size();
        for (long i = 0; i < kBatch; ++i) sockets.push_back(connect_only(port));
        echo_one_byte(sockets, first);
    }
    const long after = resident_bytes(child);
    for (int socket : sockets) ::close(socket);
    if (::write(stop_pipe[1], "x", 1) != 1) die("bench: stop");
    ::waitpid(child, nullptr, 0);
    for (int fd : {port_pipe[0], port_pipe[1], stop_pipe[0], stop_pipe[1]}) ::close(fd);
    return static_cast<double>(after - before) / static_cast<double>(connections);
}

// Client and server each hold one fd per connection: lift the soft limit.
inline bool raise_fd_limit(long needed) {
    rlimit limit{};
    ::getrlimit(RLIMIT_NOFILE, &limit);
    limit.rlim_cur = limit.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &limit);
    return static_cast<long>(limit.rlim_cur) >= needed;
}

}  // namespace bench::idle
