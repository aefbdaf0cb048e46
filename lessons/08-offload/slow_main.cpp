// slow_main.cpp — lesson 8: the slow_server program, blocking work inline or on a pool.
//
//   build/lesson8/slow_server [--port N] [--bind ADDR] [--inline] [--workers N]
//
// An echo server on one thread, as lesson 6's, where a read that starts with
// "SLOW n" is echoed after n ms of blocking work. By default the work runs on
// a ThreadPool (--workers, default 4) and only that client waits; --inline
// runs it on the server's thread, and every client waits. scripts/bench-slow.sh
// measures what that does to the other clients' latency.
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <memory>
#include <string_view>

#include "../04-echo-server/server_program.hpp"
#include "../06-time-and-events/stop_signals.hpp"
#include "fib/fiber_manager.hpp"
#include "fib/waiter.hpp"
#include "slow_server.hpp"

namespace {

constexpr const char* kUsage =
    "usage: slow_server [--port N] [--bind ADDR] [--inline] [--workers N] [--help]\n"
    "\n"
    "An echo server on one thread, one fiber per client. A read that starts with \"SLOW n\" is\n"
    "echoed after n ms of blocking work; any other read is echoed at once.\n"
    "\n"
    "  --port N      port to listen on (default 8003; 0: any free port)\n"
    "  --bind ADDR   numeric address to listen on (default 127.0.0.1)\n"
    "  --inline      do the blocking work on the server's own thread: every client waits\n"
    "  --workers N   threads of the pool the work is offloaded to (default 4)\n"
    "  --help        print this and exit\n";

}  // namespace

int main(int argc, char** argv) {
    bool run_inline = false;
    int workers = 4;
    const ServerFlags flags = parse_server_flags(
        argc, argv,
        {"slow_server", kUsage, {},
         [&](const char* flag, const std::function<const char*()>& value) -> FlagResult {
             if (std::string_view(flag) == "--inline") {
                 run_inline = true;
                 return {};
             }
             if (std::string_view(flag) == "--workers") {
                 workers = std::atoi(value());
                 if (workers < 1) return {true, "--workers wants a number of threads, 1 or more"};
                 return {};
             }
             return {false};
         },
         8003});
    raise_fd_limit();
    const int stop_fd = stop_signal_fd();
    fib::FiberManager manager;
    fib::Waiter waiter;
    std::unique_ptr<fib::ThreadPool> pool;
    if (!run_inline) pool = std::make_unique<fib::ThreadPool>(workers);
    std::unique_ptr<SlowServer> server;
    try {
        server = std::make_unique<SlowServer>(
            SlowServerOptions{.bind = flags.bind, .port = flags.port, .pool = pool.get()});
    } catch (const std::exception& error) {
        std::fprintf(stderr, "slow_server: %s\n", error.what());
        return 1;
    }
    std::printf("slow_server: listening on %s:%u (slow work %s); Ctrl-C stops it\n", flags.bind,
                server->port(), run_inline ? "inline, on this thread" : "on a pool");
    std::fflush(stdout);
    server->serve(stop_fd);
    std::printf("slow_server: %s: served %llu connections, %llu slow requests\n",
                stop_signal_fd_name(stop_fd), static_cast<unsigned long long>(server->clients_served()),
                static_cast<unsigned long long>(server->slow_requests()));
    return 0;
}
