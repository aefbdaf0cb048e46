// chat_main.cpp — lesson 9: the cluster_chat program: lesson 6's chat room on N threads.
//
//   build/lesson9/cluster_chat [--threads N] [--port N] [--bind ADDR] [--backend NAME] [--quiet]
//
// Talk to it with `nc 127.0.0.1 8005` in several terminals: the kernel puts
// each connection on one of the threads, and every line reaches every other
// member, whichever thread serves it.
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <optional>
#include <string_view>
#include <vector>

#include "../04-echo-server/server_program.hpp"
#include "../06-time-and-events/stop_signals.hpp"
#include "fib/cluster.hpp"
#include "fib/poller.hpp"
#include "fib/tcp.hpp"
#include "sharded.hpp"
#include "sharded_chat.hpp"

namespace {

constexpr const char* kUsage =
    "usage: cluster_chat [--threads N] [--port N] [--bind ADDR] [--backend NAME] [--quiet]\n"
    "                    [--help]\n"
    "\n"
    "A line-based TCP chat room served by N threads, each with its own fiber manager and its\n"
    "own listener on the same port (SO_REUSEPORT). Each line a client sends goes to every\n"
    "other client as 'user N: line', whichever thread serves it.\n"
    "\n"
    "  --threads N     threads (default: one per CPU)\n"
    "  --port N        port to listen on (default 8005; 0: any free port)\n"
    "  --bind ADDR     numeric address to listen on (default 127.0.0.1)\n"
    "  --backend NAME  each thread's Waiter: epoll or poll\n"
    "  --quiet         do not log each client's join and leave on stderr\n"
    "  --help          print this and exit\n"
    "\n"
    "Ctrl-C (SIGINT) or SIGTERM: stop every thread, close every client, exit 0.\n";

}  // namespace

int main(int argc, char** argv) {
    // First, before any thread exists: every thread must block the signals.
    const int stop_fd = stop_signal_fd();
    std::size_t threads = 0;
    const ServerFlags flags = parse_server_flags(
        argc, argv,
        {"cluster_chat", kUsage, fib::poller_names(),
         [&](const char* flag, const std::function<const char*()>& value) -> FlagResult {
             if (std::string_view(flag) != "--threads") return {false};
             const int n = std::atoi(value());
             if (n < 1 || n > 256) return {true, "--threads wants a number from 1 to 256"};
             threads = static_cast<std::size_t>(n);
             return {};
         },
         8005});
    raise_fd_limit();

    fib::Cluster cluster({.threads = threads, .backend = flags.backend});
    std::optional<ChatCluster> chat;
    unsigned port = 0;
    try {
        std::vector<fib::UniqueFd> listeners = listen_on_every_thread(flags.bind, flags.port, cluster.size());
        port = fib::tcp::local_port(listeners[0].get());
        chat.emplace(cluster.size(), std::move(listeners), ChatClusterOptions{.quiet = flags.quiet});
    } catch (const std::exception& error) {
        std::fprintf(stderr, "cluster_chat: %s\n", error.what());
        return 1;
    }
    cluster.start([&](std::size_t index) { chat->serve(index); });
    std::printf("cluster_chat: listening on %s:%u with %zu threads; Ctrl-C stops it\n", flags.bind,
                port, cluster.size());
    std::fflush(stdout);

    const char* signal = wait_for_stop_signal(stop_fd);
    cluster.stop();
    cluster.join();
    std::printf("cluster_chat: %s: clients per thread:", signal);
    for (std::size_t i = 0; i < cluster.size(); ++i) std::printf(" %llu", static_cast<unsigned long long>(chat->clients_served(i)));
    std::printf("; %llu lines said, %llu deliveries dropped for slow readers\n",
                static_cast<unsigned long long>(chat->lines_said()),
                static_cast<unsigned long long>(chat->lines_dropped()));
    return 0;
}
