// echo_main.cpp — lesson 4: the echo_server program: flags, signals, a summary at the end.
//
//   build/echo_server [--port N] [--bind ADDR] [--backend poll] [--quiet]
//
// SIGINT and SIGTERM reach the fibers through a pipe (the self-pipe trick): the
// handler only writes the signal's number into it, and serve() is waiting for
// that pipe to turn readable like for any other fd.
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <optional>

#include "echo_server.hpp"
#include "fib/fiber_manager.hpp"
#include "fib/waiter.hpp"

namespace {

constexpr const char* kUsage =
    "usage: echo_server [--port N] [--bind ADDR] [--backend poll] [--quiet] [--help]\n"
    "\n"
    "A TCP echo server: one thread, one fiber per client; it sends back every byte it reads.\n"
    "\n"
    "  --port N         port to listen on (default 8001; 0 lets the kernel pick one, and the\n"
    "                   'listening on' line says which)\n"
    "  --bind ADDR      numeric IPv4/IPv6 address to listen on (default 127.0.0.1, this machine\n"
    "                   only; 0.0.0.0 opens it to the network)\n"
    "  --backend poll   how the Waiter asks the kernel for ready fds (lesson 4 has poll only)\n"
    "  --quiet          do not log each client's connect and disconnect on stderr\n"
    "  --help           print this and exit\n"
    "\n"
    "Ctrl-C (SIGINT) or SIGTERM: stop accepting, close every client, print a summary, exit 0.\n";

int signal_pipe[2] = {-1, -1};

void on_stop_signal(int signal) {
    const int saved_errno = errno;
    const unsigned char number = static_cast<unsigned char>(signal);
    [[maybe_unused]] ssize_t ignored = ::write(signal_pipe[1], &number, 1);
    errno = saved_errno;
}

[[noreturn]] void usage_error(const char* format, const char* argument) {
    std::fprintf(stderr, "echo_server: ");
    std::fprintf(stderr, format, argument);
    std::fprintf(stderr, "\n\n%s", kUsage);
    std::exit(2);
}

EchoOptions parse(int argc, char** argv) {
    EchoOptions options;
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
        } else if (std::strcmp(flag, "--backend") == 0) {
            const char* backend = value();
            if (std::strcmp(backend, "poll") != 0)
                usage_error("unknown backend '%s' (this stage has: poll)", backend);
        } else if (std::strcmp(flag, "--quiet") == 0) {
            options.quiet = true;
        } else {
            usage_error("unknown option '%s'", flag);
        }
    }
    return options;
}

// Every client holds an fd: lift the soft limit on open fds (often 1024) to the
// hard limit, as servers do, so thousands of clients fit.
void raise_fd_limit() {
    rlimit limit{};
    if (::getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < limit.rlim_max) {
        limit.rlim_cur = limit.rlim_max;
        ::setrlimit(RLIMIT_NOFILE, &limit);
    }
}

}  // namespace

int main(int argc, char** argv) {
    const EchoOptions options = parse(argc, argv);
    raise_fd_limit();
    if (::pipe2(signal_pipe, O_NONBLOCK | O_CLOEXEC) < 0) {
        std::perror("echo_server: pipe2");
        return 1;
    }
    struct sigaction action {};
    action.sa_handler = on_stop_signal;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESTART;
    ::sigaction(SIGINT, &action, nullptr);
    ::sigaction(SIGTERM, &action, nullptr);

    fib::FiberManager manager;
    fib::Waiter waiter;
    std::optional<EchoServer> server;
    try {
        server.emplace(options);
    } catch (const std::exception& error) {
        std::fprintf(stderr, "echo_server: %s\n", error.what());
        return 1;
    }
    std::printf("echo_server: listening on %s:%u (backend poll); Ctrl-C stops it\n", options.bind,
                server->port());
    std::fflush(stdout);

    server->serve(signal_pipe[0]);

    unsigned char signal = 0;
    [[maybe_unused]] ssize_t got = ::read(signal_pipe[0], &signal, 1);
    std::printf("echo_server: %s: served %llu connections, echoed %llu bytes\n",
                signal == SIGINT ? "SIGINT" : "SIGTERM",
                static_cast<unsigned long long>(server->connections_served()),
                static_cast<unsigned long long>(server->bytes_echoed()));
    return 0;
}
