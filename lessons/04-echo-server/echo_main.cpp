// echo_main.cpp — lesson 4: the echo_server program: flags, signals, a summary at the end.
//
//   build/lessonN/echo_server [--port N] [--bind ADDR] [--backend NAME] [--quiet]
//
// SIGINT and SIGTERM reach the fibers through a pipe (the self-pipe trick, see
// server_program.hpp): serve() waits for that pipe to turn readable like for
// any other fd.
#include <cstdio>
#include <exception>
#include <optional>

#include "echo_server.hpp"
#include "server_program.hpp"
#include "fib/fiber_manager.hpp"
#include "fib/poller.hpp"
#include "fib/waiter.hpp"

namespace {

constexpr const char* kUsage =
    "usage: echo_server [--port N] [--bind ADDR] [--backend NAME] [--quiet] [--help]\n"
    "\n"
    "A TCP echo server: one thread, one fiber per client; it sends back every byte it reads.\n"
    "\n"
    "  --port N         port to listen on (default 8001; 0 lets the kernel pick one, and the\n"
    "                   'listening on' line says which)\n"
    "  --bind ADDR      numeric IPv4/IPv6 address to listen on (default 127.0.0.1, this machine\n"
    "                   only; 0.0.0.0 opens it to the network)\n"
    "  --backend NAME   how the Waiter asks the kernel which fds are ready; the list below\n"
    "                   says what this build has\n"
    "  --quiet          do not log each client's connect and disconnect on stderr\n"
    "  --help           print this and exit\n"
    "\n"
    "Ctrl-C (SIGINT) or SIGTERM: stop accepting, close every client, print a summary, exit 0.\n";

}  // namespace

int main(int argc, char** argv) {
    const ServerFlags flags =
        parse_server_flags(argc, argv, {"echo_server", kUsage, fib::poller_names()});
    raise_fd_limit();
    const int stop_fd = stop_signal_pipe();

    fib::FiberManager manager;
    fib::Waiter waiter(flags.backend);
    std::optional<EchoServer> server;
    try {
        server.emplace(EchoOptions{.bind = flags.bind, .port = flags.port, .quiet = flags.quiet});
    } catch (const std::exception& error) {
        std::fprintf(stderr, "echo_server: %s\n", error.what());
        return 1;
    }
    std::printf("echo_server: listening on %s:%u (backend %s); Ctrl-C stops it\n", flags.bind,
                server->port(), waiter.poller().name());
    std::fflush(stdout);

    server->serve(stop_fd);

    std::printf("echo_server: %s: served %llu connections, echoed %llu bytes\n",
                stop_signal_name(stop_fd),
                static_cast<unsigned long long>(server->connections_served()),
                static_cast<unsigned long long>(server->bytes_echoed()));
    return 0;
}
