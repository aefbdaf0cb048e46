// echo_threads.cpp — lesson 4: the baseline, an echo server with one thread per client.
//
//   build/echo_threads [--port N] [--bind ADDR] [--quiet]
//
// What lesson 4 replaces: each client gets a std::thread that blocks in read()
// and send() on a blocking socket, and the kernel's scheduler does what the
// fibers and the Waiter do in echo_server. make bench-echo runs both under the
// same load (scripts/bench-echo.sh). It is written plainly, the way such a
// server usually is: neither slowed down nor tuned.
//
// SIGINT and SIGTERM reach the accept loop through a pipe (the self-pipe
// trick): the handler may run on any thread, and it only writes the signal's
// number into the pipe, which the main thread polls beside the listener.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
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

struct Options {
    const char* bind = "127.0.0.1";
    std::uint16_t port = 8001;
    bool quiet = false;
};

// Updated by every client thread; they are trivially destructible, so the
// detached threads may still touch them while main returns.
std::atomic<std::uint64_t> connections_served{0};
std::atomic<std::uint64_t> bytes_echoed{0};

int signal_pipe[2] = {-1, -1};

void on_stop_signal(int signal) {
    const int saved_errno = errno;
    const unsigned char number = static_cast<unsigned char>(signal);
    [[maybe_unused]] ssize_t ignored = ::write(signal_pipe[1], &number, 1);
    errno = saved_errno;
}

[[noreturn]] void usage_error(const char* format, const char* argument) {
    std::fprintf(stderr, "echo_threads: ");
    std::fprintf(stderr, format, argument);
    std::fprintf(stderr, "\n\n%s", kUsage);
    std::exit(2);
}

Options parse(int argc, char** argv) {
    Options options;
    for (int i = 1; i < argc; ++i) {
        const char* flag = argv[i];
        auto value = [&]() -> const char* {
            if (i + 1 >= argc) usage_error("%s needs a value", flag);
            return argv[++i];
        };
        if (std::strcmp(flag, "--help") == 0) {
            std::fputs(kUsage, stdout);
            std::exit(0);
        } else if (std::strcmp(flag, "--port") == 0) {
            const char* text = value();
            char* end = nullptr;
            const long port = std::strtol(text, &end, 10);
            if (*text == '\0' || *end != '\0' || port < 0 || port > 65535)
                usage_error("--port wants a number from 0 to 65535, not '%s'", text);
            options.port = static_cast<std::uint16_t>(port);
        } else if (std::strcmp(flag, "--bind") == 0) {
            options.bind = value();
        } else if (std::strcmp(flag, "--quiet") == 0) {
            options.quiet = true;
        } else {
            usage_error("unknown option '%s'", flag);
        }
    }
    return options;
}

// A thread per client means an fd per client: allow as many as the hard limit.
void raise_fd_limit() {
    rlimit limit{};
    if (::getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < limit.rlim_max) {
        limit.rlim_cur = limit.rlim_max;
        ::setrlimit(RLIMIT_NOFILE, &limit);
    }
}

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
void accept_until_stopped(int listener, const Options& options) {
    pollfd watched[2] = {{signal_pipe[0], POLLIN, 0}, {listener, POLLIN, 0}};
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
            std::thread(serve_client, std::move(socket), name, options.quiet).detach();
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
    const Options options = parse(argc, argv);
    raise_fd_limit();
    if (::pipe2(signal_pipe, O_NONBLOCK | O_CLOEXEC) < 0) {
        std::perror("echo_threads: pipe2");
        return 1;
    }
    struct sigaction action {};
    action.sa_handler = on_stop_signal;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESTART;  // client threads' read()/send() resume; poll() never does
    ::sigaction(SIGINT, &action, nullptr);
    ::sigaction(SIGTERM, &action, nullptr);

    fib::UniqueFd listener;
    try {
        listener = fib::tcp::listen(options.bind, options.port);
    } catch (const std::exception& error) {
        std::fprintf(stderr, "echo_threads: %s\n", error.what());
        return 1;
    }
    std::printf("echo_threads: listening on %s:%u; Ctrl-C stops it\n", options.bind,
                fib::tcp::local_port(listener.get()));
    std::fflush(stdout);

    accept_until_stopped(listener.get(), options);

    unsigned char signal = 0;
    [[maybe_unused]] ssize_t got = ::read(signal_pipe[0], &signal, 1);
    std::printf("echo_threads: %s: served %llu connections, echoed %llu bytes\n",
                signal == SIGINT ? "SIGINT" : "SIGTERM",
                static_cast<unsigned long long>(connections_served.load()),
                static_cast<unsigned long long>(bytes_echoed.load()));
    std::fflush(stdout);
    // The client threads are detached and still blocked in read(): exiting
    // ends them, and the kernel closes their sockets.
    return 0;
}
