// co_echo_main.cpp — lesson 10: the co_echo_server program: lesson 4's echo_server, served by tasks.
//
//   build/lesson10/co_echo_server [--port N] [--bind ADDR] [--backend NAME] [--quiet]
#include <cstdio>
#include <exception>
#include <optional>

#include "../04-echo-server/server_program.hpp"
#include "co_echo_server.hpp"
#include "fib/fiber_manager.hpp"
#include "fib/poller.hpp"
#include "fib/waiter.hpp"

namespace {

constexpr const char* kUsage =
    "usage: co_echo_server [--port N] [--bind ADDR] [--backend NAME] [--quiet] [--help]\n"
    "\n"
    "A TCP echo server: one thread, one C++20 coroutine (a fib::Task) per client, on the\n"
    "fibers' Waiter; it sends back every byte it reads.\n"
    "\n"
    "  --port N         port to listen on (default 8006; 0 lets the kernel pick one, and the\n"
    "                   'listening on' line says which)\n"
    "  --bind ADDR      numeric IPv4/IPv6 address to listen on (default 127.0.0.1)\n"
    "  --backend NAME   how the Waiter asks the kernel which fds are ready\n"
    "  --quiet          do not log each client's connect and disconnect on stderr\n"
    "  --help           print this and exit\n"
    "\n"
    "Ctrl-C (SIGINT) or SIGTERM: stop, destroy every client's task, print a summary, exit 0.\n";

}  // namespace

int main(int argc, char** argv) {
    const ServerFlags flags = parse_server_flags(
        argc, argv, {"co_echo_server", kUsage, fib::poller_names(), nullptr, 8006});
    raise_fd_limit();
    const int stop_fd = stop_signal_pipe();

    fib::FiberManager manager;
    fib::Waiter waiter(flags.backend);
    std::optional<CoEchoServer> server;
    try {
        server.emplace(EchoOptions{.bind = flags.bind, .port = flags.port, .quiet = flags.quiet});
    } catch (const std::exception& error) {
        std::fprintf(stderr, "co_echo_server: %s\n", error.what());
        return 1;
    }
    std::printf("co_echo_server: listening on %s:%u (backend %s); Ctrl-C stops it\n", flags.bind,
                server->port(), waiter.poller().name());
    std::fflush(stdout);

    server->serve(stop_fd);

    std::printf("co_echo_server: %s: served %llu connections, echoed %llu bytes\n",
                stop_signal_name(stop_fd),
                static_cast<unsigned long long>(server->connections_served()),
                static_cast<unsigned long long>(server->bytes_echoed()));
    return 0;
}
