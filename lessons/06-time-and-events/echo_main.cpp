// echo_main.cpp — lesson 6: the echo_server program, grown: signalfd, deadlines, --udp.
//
//   build/lesson6/echo_server [--port N] [--bind ADDR] [--backend NAME] [--idle-timeout S]
//                             [--write-timeout S] [--udp] [--quiet]
//
// Lesson 4's program (lessons/04-echo-server/echo_main.cpp) with what lesson
// 6 adds: SIGINT and SIGTERM arrive through a signalfd the Waiter watches
// (stop_signals.hpp); the server is TimedEchoServer, which closes clients
// that stay silent (--idle-timeout) or stop reading (--write-timeout) and
// stops by cancelling its fibers; --udp echoes datagrams instead
// (UdpEchoServer). At the stop it also prints the Waiter's counters, which
// make bench-echo's epoll_ctl-per-message figure. From stage 6 on, the
// echo_server program is built from this file.
#include <cstdio>
#include <exception>
#include <memory>
#include <string_view>

#include "../04-echo-server/server_program.hpp"
#include "fib/epoll_poller.hpp"
#include "fib/fiber_manager.hpp"
#include "fib/poller.hpp"
#include "fib/waiter.hpp"
#include "stop_signals.hpp"
#include "timed_echo_server.hpp"
#include "timeout_flags.hpp"
#include "udp_echo.hpp"

namespace {

constexpr const char* kUsage =
    "usage: echo_server [--port N] [--bind ADDR] [--backend NAME] [--idle-timeout S]\n"
    "                   [--write-timeout S] [--udp] [--quiet] [--help]\n"
    "\n"
    "An echo server: one thread, one fiber per TCP client; it sends back every byte it reads.\n"
    "\n"
    "  --port N           port to listen on (default 8001; 0 lets the kernel pick one, and the\n"
    "                     'listening on' line says which)\n"
    "  --bind ADDR        numeric IPv4/IPv6 address to listen on (default 127.0.0.1, this\n"
    "                     machine only; 0.0.0.0 opens it to the network)\n"
    "  --backend NAME     how the Waiter asks the kernel which fds are ready; the list below\n"
    "                     says what this build has\n" TIMEOUT_FLAGS_USAGE
    "  --udp              echo UDP datagrams on the port instead, each back to its sender\n"
    "  --quiet            do not log each client's connect and disconnect on stderr\n"
    "  --help             print this and exit\n"
    "\n"
    "Ctrl-C (SIGINT) or SIGTERM: stop accepting, close every client, print a summary, exit 0.\n";

// --udp, beside the two timeouts.
ExtraFlags udp_flag(bool& udp) {
    return [&udp](const char* flag, const std::function<const char*()>&) -> FlagResult {
        udp = std::string_view(flag) == "--udp";
        return {udp};
    };
}

void print_waiter_stats(const fib::Waiter& waiter) {
    const fib::WaiterStats stats = waiter.stats();
    std::printf(
        "echo_server: waiter: %llu polls (%llu blocking), %llu wakeups, %llu interest changes\n",
        static_cast<unsigned long long>(stats.polls),
        static_cast<unsigned long long>(stats.blocking_polls),
        static_cast<unsigned long long>(stats.wakeups),
        static_cast<unsigned long long>(fib::epoll_ctl_calls(waiter.poller())));
}

int serve_udp(const ServerFlags& flags, int stop_fd) {
    std::unique_ptr<UdpEchoServer> server;
    try {
        server =
            std::make_unique<UdpEchoServer>(EchoOptions{.bind = flags.bind, .port = flags.port});
    } catch (const std::exception& error) {
        std::fprintf(stderr, "echo_server: %s\n", error.what());
        return 1;
    }
    std::printf("echo_server: listening on %s:%u (udp, backend %s); Ctrl-C stops it\n", flags.bind,
                server->port(), fib::Waiter::current()->poller().name());
    std::fflush(stdout);
    server->serve(stop_fd);
    std::printf("echo_server: %s: echoed %llu datagrams, %llu bytes\n",
                stop_signal_fd_name(stop_fd),
                static_cast<unsigned long long>(server->datagrams_echoed()),
                static_cast<unsigned long long>(server->bytes_echoed()));
    return 0;
}

int serve_tcp(const ServerFlags& flags, const TimeoutFlags& timeouts, int stop_fd) {
    std::unique_ptr<TimedEchoServer> server;
    try {
        server =
            std::make_unique<TimedEchoServer>(TimedEchoOptions{.bind = flags.bind,
                                                               .port = flags.port,
                                                               .quiet = flags.quiet,
                                                               .idle_timeout = timeouts.idle(),
                                                               .write_timeout = timeouts.write()});
    } catch (const std::exception& error) {
        std::fprintf(stderr, "echo_server: %s\n", error.what());
        return 1;
    }
    std::printf("echo_server: listening on %s:%u (backend %s); Ctrl-C stops it\n", flags.bind,
                server->port(), fib::Waiter::current()->poller().name());
    std::fflush(stdout);
    server->serve(stop_fd);
    std::printf(
        "echo_server: %s: served %llu connections, echoed %llu bytes; closed %llu idle, %llu "
        "stalled\n",
        stop_signal_fd_name(stop_fd), static_cast<unsigned long long>(server->clients_served()),
        static_cast<unsigned long long>(server->bytes_echoed()),
        static_cast<unsigned long long>(server->idle_closed()),
        static_cast<unsigned long long>(server->slow_closed()));
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    const int stop_fd = stop_signal_fd();  // before any thread could start
    TimeoutFlags timeouts;
    bool udp = false;
    const ServerFlags flags = parse_server_flags(
        argc, argv,
        {"echo_server", kUsage, fib::poller_names(), timeout_flags(timeouts, udp_flag(udp))});
    raise_fd_limit();

    fib::FiberManager manager;
    fib::Waiter waiter(flags.backend);
    const int status = udp ? serve_udp(flags, stop_fd) : serve_tcp(flags, timeouts, stop_fd);
    if (status == 0) print_waiter_stats(waiter);
    return status;
}
