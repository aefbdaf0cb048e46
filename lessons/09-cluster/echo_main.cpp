// echo_main.cpp — lesson 9: the cluster_echo program: an echo server on N threads, one port.
//
//   build/lesson9/cluster_echo [--threads N] [--work-us N] [--port N] [--bind ADDR] [--backend NAME]
//
// Each thread has a FiberManager, a Waiter, a listener on the shared port
// (SO_REUSEPORT) and a ShardEchoServer. The program's own thread only waits
// for SIGINT or SIGTERM, then stops the cluster and prints how many
// connections each thread served: how evenly the kernel spread them.
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string_view>
#include <vector>

#include "../04-echo-server/server_program.hpp"
#include "../06-time-and-events/stop_signals.hpp"
#include "fib/cluster.hpp"
#include "fib/poller.hpp"
#include "fib/tcp.hpp"
#include "shard_echo.hpp"
#include "sharded.hpp"

namespace {

constexpr const char* kUsage =
    "usage: cluster_echo [--threads N] [--work-us N] [--port N] [--bind ADDR] [--backend NAME]\n"
    "                    [--help]\n"
    "\n"
    "An echo server on N threads, each with its own fiber manager and its own listener on the\n"
    "same port (SO_REUSEPORT): the kernel spreads the connections over the threads.\n"
    "\n"
    "  --threads N     threads (default: one per CPU)\n"
    "  --work-us N     CPU microseconds spent on each read before its echo (default 0)\n"
    "  --port N        port to listen on (default 8004; 0: any free port)\n"
    "  --bind ADDR     numeric address to listen on (default 127.0.0.1)\n"
    "  --backend NAME  each thread's Waiter: epoll or poll\n"
    "  --help          print this and exit\n"
    "\n"
    "Ctrl-C (SIGINT) or SIGTERM: stop every thread, print what each served, exit 0.\n";

struct ThreadCounts {
    unsigned long long connections = 0, bytes = 0;
};

}  // namespace

int main(int argc, char** argv) {
    // First, before any thread exists: every thread must block the signals.
    const int stop_fd = stop_signal_fd();
    std::size_t threads = 0;
    ShardEchoOptions options;
    const ServerFlags flags = parse_server_flags(
        argc, argv,
        {"cluster_echo", kUsage, fib::poller_names(),
         [&](const char* flag, const std::function<const char*()>& value) -> FlagResult {
             if (std::string_view(flag) == "--threads") {
                 const int n = std::atoi(value());
                 if (n < 1 || n > 256) return {true, "--threads wants a number from 1 to 256"};
                 threads = static_cast<std::size_t>(n);
                 return {};
             }
             if (std::string_view(flag) == "--work-us") {
                 const int us = std::atoi(value());
                 if (us < 0 || us > 1'000'000) return {true, "--work-us wants 0 to 1000000"};
                 options.work = std::chrono::microseconds(us);
                 return {};
             }
             return {false};
         },
         8004});
    raise_fd_limit();

    fib::Cluster cluster({.threads = threads, .backend = flags.backend});
    std::vector<fib::UniqueFd> listeners;
    try {
        listeners = listen_on_every_thread(flags.bind, flags.port, cluster.size());
    } catch (const std::exception& error) {
        std::fprintf(stderr, "cluster_echo: %s\n", error.what());
        return 1;
    }
    const unsigned port = fib::tcp::local_port(listeners[0].get());
    std::vector<ThreadCounts> counts(cluster.size());
    cluster.start([&](std::size_t index) {
        ShardEchoServer server(std::move(listeners[index]), options);
        serve_until_stopped(server);
        counts[index] = {server.clients_served(), server.bytes_echoed()};
    });
    std::printf("cluster_echo: listening on %s:%u with %zu threads (work %lld us per read); "
                "Ctrl-C stops it\n",
                flags.bind, port, cluster.size(), static_cast<long long>(options.work.count()));
    std::fflush(stdout);

    const char* signal = wait_for_stop_signal(stop_fd);
    cluster.stop();
    cluster.join();
    std::printf("cluster_echo: %s: connections per thread:", signal);
    for (const ThreadCounts& c : counts) std::printf(" %llu", c.connections);
    unsigned long long bytes = 0;
    for (const ThreadCounts& c : counts) bytes += c.bytes;
    std::printf("; %llu bytes echoed\n", bytes);
    return 0;
}
