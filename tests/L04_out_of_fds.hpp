// L04_out_of_fds.hpp — lesson 4: the echo server out of fds, as a death test's child runs it.
// tests/L04_echo_hostile_test.cpp runs it against EchoServer; a later lesson's test may run it
// against another server with the same counters (ServerThreadType: a ServerThread<S>, see
// L04_server_thread.hpp).
#pragma once

#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <vector>

#include "L04_echo_harness.hpp"

namespace l04_echo {

// The fd limit that leaves exactly `free` unused fd numbers below it (new fds take the lowest).
inline rlim_t limit_leaving(int free) {
    const std::set<int> open = open_fds();
    int fd = 0;
    while (open.count(fd) || free-- > 0) ++fd;
    return static_cast<rlim_t>(fd);
}

[[noreturn]] inline void fail(const char* what) {
    std::fprintf(stderr, "FAILED: %s\n", what);
    std::_Exit(1);
}

// A death test's child: server and clients share this process's fds. After a first client,
// with 8 fds free, 11 clients connect: 8 are served, 3 wait in the backlog while the acceptor
// backs off; each client that leaves lets one waiting client in. Then, all gone and no fd
// free, one more client is refused through the spare fd. Returns 0 when all went as said.
template <class ServerThreadType>
int run_out_of_fds() {
    ServerThreadType server;
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

}  // namespace l04_echo
