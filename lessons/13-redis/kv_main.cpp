// kv_main.cpp — lesson 13: the kv_server program: a Redis-compatible server that redis-cli and redis-benchmark talk to.
//
//   build/lesson13/kv_server [--port N] [--bind ADDR] [--threads N] [--backend NAME] [--snapshot FILE]
//                            [--idle-timeout S] [--write-timeout S] [--quiet]
//   redis-cli -p 6380 set greeting hello
//
// The flags are the echo servers' (lesson 4's parser, lesson 6's timeouts).
// The snapshot FILE (SAVE's) is loaded at start when it is there. With
// --threads N it is the per-core variant (kv_cluster.hpp): N threads, each
// with its own keys and its own listener on the port.
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <memory>
#include <string_view>

#include "../04-echo-server/server_program.hpp"
#include "../06-time-and-events/stop_signals.hpp"
#include "../06-time-and-events/timeout_flags.hpp"
#include "../09-cluster/sharded.hpp"
#include "fib/fiber_manager.hpp"
#include "fib/poller.hpp"
#include "fib/tcp.hpp"
#include "fib/waiter.hpp"
#include "kv_cluster.hpp"
#include "kv_server.hpp"
#include "snapshot.hpp"

namespace {

constexpr const char* kUsage =
    "usage: kv_server [--port N] [--bind ADDR] [--threads N] [--backend NAME] [--snapshot FILE]\n"
    "                 [--idle-timeout S] [--write-timeout S] [--quiet] [--help]\n"
    "\n"
    "A Redis-compatible server (RESP2: strings, lists, BLPOP, pub/sub, expiry, SAVE): one fiber\n"
    "per client on one thread. Talk to it with redis-cli -p 6380.\n"
    "\n"
    "  --port N           port to listen on (default 6380, Redis's plus one; 0: any free port)\n"
    "  --bind ADDR        numeric IPv4/IPv6 address to listen on (default 127.0.0.1)\n"
    "  --threads N        the per-core variant: N threads, the keys sharded over them, a\n"
    "                     command for another thread's keys forwarded to it (default 1)\n"
    "  --backend NAME     how the Waiter asks the kernel which fds are ready (list below)\n"
    "  --snapshot FILE    SAVE's file, loaded at start when it is there (default kv_snapshot.resp;\n"
    "                     with --threads, FILE.N for thread N, not loaded)\n"
    TIMEOUT_FLAGS_USAGE
    "  --quiet            do not log clients closed for a limit\n"
    "  --help             print this and exit\n"
    "\n"
    "Ctrl-C (SIGINT) or SIGTERM: close every client, print a summary, exit 0.\n";

int serve_one_thread(const ServerFlags& flags, const KvOptions& options, int stop_fd) {
    fib::FiberManager manager;
    fib::Waiter waiter(flags.backend);
    kv::Store store;
    std::unique_ptr<KvServer> server;
    try {
        server = std::make_unique<KvServer>(options, store);
        if (kv::load_snapshot(options.snapshot_path, store) != 0)
            std::printf("kv_server: loaded %zu keys from %s\n", store.keyspace.size(), options.snapshot_path.c_str());
    } catch (const std::exception& error) {
        std::fprintf(stderr, "kv_server: %s\n", error.what());
        return 1;
    }
    std::printf("kv_server: listening on %s:%u (backend %s); try: redis-cli -p %u; Ctrl-C stops it\n", flags.bind,
                server->port(), waiter.poller().name(), server->port());
    std::fflush(stdout);
    server->serve(stop_fd);
    std::printf("kv_server: %s: served %llu connections; %zu keys\n", stop_signal_fd_name(stop_fd),
                static_cast<unsigned long long>(server->clients_served()), store.keyspace.size());
    return 0;
}

int serve_per_core(const ServerFlags& flags, const KvOptions& options, std::size_t threads, int stop_fd) {
    std::unique_ptr<KvCluster> cluster;
    try {
        cluster = std::make_unique<KvCluster>(options, threads, flags.backend);
    } catch (const std::exception& error) {
        std::fprintf(stderr, "kv_server: %s\n", error.what());
        return 1;
    }
    cluster->start();
    std::printf("kv_server: listening on %s:%u with %zu threads, the keys sharded over them; try: redis-cli -p %u; "
                "Ctrl-C stops it\n",
                flags.bind, cluster->port(), threads, cluster->port());
    std::fflush(stdout);
    const char* signal = wait_for_stop_signal(stop_fd);
    cluster->stop();
    std::printf("kv_server: %s: connections per thread:", signal);
    for (std::size_t i = 0; i < threads; ++i) std::printf(" %llu", cluster->served(i));
    std::printf("; keys per thread:");
    for (std::size_t i = 0; i < threads; ++i) std::printf(" %zu", cluster->store(i).keyspace.size());
    std::printf("\n");
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    const int stop_fd = stop_signal_fd();  // before any thread starts
    TimeoutFlags timeouts;
    KvOptions options;
    std::size_t threads = 1;
    const ServerFlags flags = parse_server_flags(
        argc, argv,
        {"kv_server", kUsage, fib::poller_names(),
         timeout_flags(timeouts,
                       [&](const char* flag, const std::function<const char*()>& value) -> FlagResult {
                           if (std::string_view(flag) == "--threads") {
                               const int n = std::atoi(value());
                               if (n < 1 || n > 256) return {true, "--threads wants a number from 1 to 256"};
                               threads = static_cast<std::size_t>(n);
                               return {};
                           }
                           if (std::string_view(flag) != "--snapshot") return {false};
                           options.snapshot_path = value();
                           return {};
                       }),
         6380});
    raise_fd_limit();
    options.bind = flags.bind;
    options.port = flags.port;
    options.quiet = flags.quiet;
    options.limits.idle_timeout = timeouts.idle();
    options.limits.write_timeout = timeouts.write();

    return threads == 1 ? serve_one_thread(flags, options, stop_fd) : serve_per_core(flags, options, threads, stop_fd);
}
