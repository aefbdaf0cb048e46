// echo_threads.cpp — lesson 4: the baseline, an echo server with one thread per client.
//
//   build/lessonN/echo_threads [--port N] [--bind ADDR] [--quiet]
//
// What lesson 4 replaces: each client gets a std::thread that blocks in read()
// and send() on a blocking socket, and the kernel's scheduler does what the
// fibers and the Waiter do in echo_server. make bench-echo-lessonN runs both under the
// same load (scripts/bench-echo.sh). It is written plainly, the way such a
// server usually is: neither slowed down nor tuned.
//
// SIGINT and SIGTERM reach the accept loop through a pipe (the self-pipe
// trick, see server_program.hpp): the handler may run on any thread, and the
// main thread polls the pipe beside the listener.
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <system_error>
#include <thread>

#include "fib/tcp.hpp"
#include "fib/unique_fd.hpp"
#include "server_program.hpp"

namespace {

constexpr const char* kUsage =
    "usage: echo_threads [--port N] [--bind ADDR] [--quiet] [--help]\n"
    "\n"
    "A TCP echo server with one thread per client and blocking sockets: the baseline\n"
    "that echo_server (one thread, one fiber per client) is measured against.\n"
    "\n"
    "  --port N      port to listen on (default 8001; 0 lets the kernel pick one, and the\n"
    "                'listening on' line says which)\n"
    "  --bind ADDR   numeric IPv4/IPv6 address to listen on (default 127.0.0.1)\n"
    "  --quiet       do not log each client's connect and disconnect on stderr\n"
    "  --help        print this and exit\n"
    "\n"
    "Ctrl-C (SIGINT) or SIGTERM: print a summary and exit 0 (clients are cut off).\n";

// Updated by every client thread; they are trivially destructible, so the
// detached threads may still touch them while main returns.
std::atomic<std::uint64_t> connections_served{0};
std::atomic<std::uint64_t> bytes_echoed{0};

// One client's thread: read what it sends and write it all back, until it
// closes or fails. The socket is blocking, so read() and send() simply wait
// (and a signal handled meanwhile does not interrupt them: SA_RESTART).
void serve_client(fib::UniqueFd socket, fib::tcp::AddressText name, bool quiet) {
    if (!quiet) std::fprintf(stderr, "echo_threads: %s connected\n", name.text);
    char buffer[16 * 1024];
    std::uint64_t echoed = 0;
    int error = 0;
    for (;;) {
        const ssize_t received = ::read(socket.get(), buffer, sizeof buffer);
        if (received <= 0) {
            error = received < 0 ? errno : 0;
            break;
        }
        ssize_t sent = 0;
        while (sent < received) {
            const ssize_t n = ::send(socket.get(), buffer + sent,
                                     static_cast<std::size_t>(received - sent), MSG_NOSIGNAL);
            if (n < 0) break;
            sent += n;
        }
        if (sent < received) {
            error = errno;
            break;
        }
        echoed += static_cast<std::uint64_t>(received);
        bytes_echoed.fetch_add(static_cast<std::uint64_t>(received), std::memory_order_relaxed);
    }
    if (!quiet)
        std::fprintf(stderr, "echo_threads: %s left after %llu bytes%s%s\n", name.text,
                     static_cast<unsigned long long>(echoed), error ? ": " : "",
                     error ? std::strerror(error) : "");
}

// Accepts until the signal pipe turns readable. The listener is non-blocking
// (poll may report a connection that is gone by the time accept() looks); the
// accepted sockets are blocking, for their threads.
void accept_until_stopped(int listener, int stop_fd, bool quiet) {
    pollfd watched[2] = {{stop_fd, POLLIN, 0}, {listener, POLLIN, 0}};
    for (;;) {
        if (::poll(watched, 2, -1) < 0) {
            if (errno == EINTR) continue;
            std::perror("echo_threads: poll");
            return;
        }
        if (watched[0].revents) return;
        sockaddr_storage peer{};
        socklen_t peer_length = sizeof peer;
        fib::UniqueFd socket(
            ::accept4(listener, reinterpret_cast<sockaddr*>(&peer), &peer_length, SOCK_CLOEXEC));
        if (!socket) {
            const int error = errno;
            if (error == EAGAIN || error == ECONNABORTED) continue;
            std::fprintf(stderr, "echo_threads: accept: %s\n", std::strerror(error));
            // Out of fds or memory: the listener stays readable, so pause
            // rather than spin until a client leaves.
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
            continue;
        }
        fib::tcp::set_no_delay(socket.get());  // as echo_server does: no Nagle
        const fib::tcp::AddressText name = fib::tcp::to_text(reinterpret_cast<sockaddr*>(&peer));
        try {
            std::thread(serve_client, std::move(socket), name, quiet).detach();
        } catch (const std::system_error& error) {
            // No thread for this client (EAGAIN: see ulimit -u, threads-max).
            std::fprintf(stderr, "echo_threads: no thread for %s: %s\n", name.text, error.what());
            continue;
        }
        connections_served.fetch_add(1, std::memory_order_relaxed);
    }
}

}  // namespace

int main(int argc, char** argv) {
    const ServerFlags flags = parse_server_flags(argc, argv, {"echo_threads", kUsage, {}});
    raise_fd_limit();
    const int stop_fd = stop_signal_pipe();  // SA_RESTART: client threads' read()/send() resume

    fib::UniqueFd listener;
    try {
        listener = fib::tcp::listen(flags.bind, flags.port);
    } catch (const std::exception& error) {
        std::fprintf(stderr, "echo_threads: %s\n", error.what());
        return 1;
    }
    std::printf("echo_threads: listening on %s:%u; Ctrl-C stops it\n", flags.bind,
                fib::tcp::local_port(listener.get()));
    std::fflush(stdout);

    accept_until_stopped(listener.get(), stop_fd, flags.quiet);

    std::printf("echo_threads: %s: served %llu connections, echoed %llu bytes\n",
                stop_signal_name(stop_fd),
                static_cast<unsigned long long>(connections_served.load()),
                static_cast<unsigned long long>(bytes_echoed.load()));
    std::fflush(stdout);
    // The client threads are detached and still blocked in read(): exiting
    // ends them, and the kernel closes their sockets.
    return 0;
}
