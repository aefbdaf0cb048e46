// completion_echo.cpp — lesson 11: the completion_echo program: an echo server whose reads are operations.
//
//   build/lesson11/completion_echo [--port N] [--bind ADDR] [--backend NAME] [--quiet]
//
// Lesson 4's echo loop lends one read buffer to every connection, which only
// a readiness read allows (echo_connection.cpp). Here each client's fiber owns
// its buffer, so fib::io::read may hand it to the kernel for the whole wait:
// on a ring backend each read is one SQE and one CQE. The same program runs
// on every backend, which is what lesson 11's ablation table compares. With
// FIB_URING_STATS=1 its ring says, as it goes, what it did.
#include <cstdio>
#include <exception>
#include <memory>
#include <optional>

#include "../04-echo-server/server_program.hpp"
#include "../06-time-and-events/fiber_server.hpp"
#include "../06-time-and-events/stop_signals.hpp"
#include "fib/fiber_manager.hpp"
#include "fib/io.hpp"
#include "fib/poller.hpp"
#include "fib/waiter.hpp"

namespace {

constexpr const char* kUsage =
    "usage: completion_echo [--port N] [--bind ADDR] [--backend NAME] [--quiet] [--help]\n"
    "\n"
    "A TCP echo server: a fiber per client, each with a read buffer of its own, so that on\n"
    "an io_uring backend every read is an operation the kernel completes.\n"
    "\n"
    "  --port N         port to listen on (default 8011; 0 lets the kernel pick one, and the\n"
    "                   'listening on' line says which)\n"
    "  --bind ADDR      numeric IPv4/IPv6 address to listen on (default 127.0.0.1)\n"
    "  --backend NAME   the Waiter's backend (FIB_BACKEND too); the list below\n"
    "  --quiet          accepted for the bench scripts; this server logs nothing per client\n"
    "  --help           print this and exit\n"
    "\n"
    "Ctrl-C (SIGINT) or SIGTERM: stop, print a summary, exit 0.\n";

// Each client's buffer, 16 KiB: the largest message lesson 11's bench sends
// fits in one read. It is allocated when the client connects and lives as
// long as the client, idle or not: what a completion read costs in memory.
constexpr std::size_t kBufferSize = 16 * 1024;

class CompletionEcho : public FiberServer {
public:
    CompletionEcho(const char* bind, std::uint16_t port) : FiberServer("completion_echo", bind, port) {}
    unsigned long long bytes_echoed() const { return bytes_; }

protected:
    void serve_client(int socket) override {
        const auto buffer = std::make_unique_for_overwrite<char[]>(kBufferSize);
        for (;;) {
            const ssize_t n = fib::io::read(socket, buffer.get(), kBufferSize);
            if (n <= 0) return;
            if (fib::io::send_all(socket, buffer.get(), static_cast<std::size_t>(n)) < 0) return;
            bytes_ += static_cast<unsigned long long>(n);
        }
    }

private:
    unsigned long long bytes_ = 0;  // only this thread's fibers add to it
};

}  // namespace

int main(int argc, char** argv) {
    const int stop_fd = stop_signal_fd();
    const ServerFlags flags =
        parse_server_flags(argc, argv, {"completion_echo", kUsage, fib::poller_names(), nullptr, 8011});
    raise_fd_limit();

    fib::FiberManager manager;
    fib::Waiter waiter(flags.backend);
    std::optional<CompletionEcho> server;
    try {
        server.emplace(flags.bind, flags.port);
    } catch (const std::exception& error) {
        std::fprintf(stderr, "completion_echo: %s\n", error.what());
        return 1;
    }
    std::printf("completion_echo: listening on %s:%u (backend %s); Ctrl-C stops it\n", flags.bind, server->port(),
                waiter.poller().name());
    std::fflush(stdout);

    server->serve(stop_fd);

    std::printf("completion_echo: %s: served %llu clients, echoed %llu bytes\n", stop_signal_fd_name(stop_fd),
                static_cast<unsigned long long>(server->clients_served()), server->bytes_echoed());
    return 0;
}
