// completion_echo.cpp — lesson 11: the completion_echo program: an echo server whose reads are operations.
//
//   build/lesson11/completion_echo [--port N] [--bind ADDR] [--backend NAME] [--buffers N]
//                                  [--multishot-accept] [--quiet]
//
// Lesson 4's echo loop lends one read buffer to every connection, which only
// a readiness read allows (echo_connection.cpp). Here each client's fiber owns
// its buffer, so fib::io::read may hand it to the kernel for the whole wait:
// on a ring backend each read is one SQE and one CQE. With --buffers N the
// clients own no buffer: every receive takes one of a pool of N, registered
// with the ring, only when its data has come (uring_buffers.hpp), and gives
// it back once the bytes are sent; with --multishot-accept one armed accept
// hands it every connection (uring_accept.hpp). The same program runs on every backend,
// which is what lesson 11's ablation table compares. With
// FIB_URING_STATS=1 its ring says, as it goes, what it did.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <functional>
#include <memory>
#include <optional>

#include "../04-echo-server/server_program.hpp"
#include "../06-time-and-events/fiber_server.hpp"
#include "../06-time-and-events/stop_signals.hpp"
#include "fib/fiber_manager.hpp"
#include "fib/io.hpp"
#include "fib/poller.hpp"
#include "fib/uring_accept.hpp"
#include "fib/uring_buffers.hpp"
#include "fib/uring_io.hpp"
#include "fib/waiter.hpp"

namespace {

constexpr const char* kUsage =
    "usage: completion_echo [--port N] [--bind ADDR] [--backend NAME] [--buffers N] [--multishot-accept]\n"
    "                       [--quiet] [--help]\n"
    "\n"
    "A TCP echo server: a fiber per client, each with a read buffer of its own, so that on\n"
    "an io_uring backend every read is an operation the kernel completes.\n"
    "\n"
    "  --port N         port to listen on (default 8011; 0 lets the kernel pick one, and the\n"
    "                   'listening on' line says which)\n"
    "  --bind ADDR      numeric IPv4/IPv6 address to listen on (default 127.0.0.1)\n"
    "  --backend NAME   the Waiter's backend (FIB_BACKEND too); the list below\n"
    "  --buffers N      receive into a pool of N 16 KiB buffers registered with the ring (a\n"
    "                   power of two up to 32768; the uring backends that run operations)\n"
    "                   instead of a buffer per client\n"
    "  --multishot-accept  take connections from one multishot accept on the ring (the same\n"
    "                   backends) instead of a poll and an accept4 each\n"
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
    CompletionEcho(const char* bind, std::uint16_t port, fib::io::ring::BufferRing* pool, bool multishot_accept)
        : FiberServer("completion_echo", bind, port), pool_(pool), multishot_accept_(multishot_accept) {}
    unsigned long long bytes_echoed() const { return bytes_; }

protected:
    // The Acceptor is armed at the first call, on the server's thread, and
    // goes with the server, before the Waiter. A multishot accept cannot
    // return the client's address: getpeername asks for it.
    int accept_client(sockaddr* peer, socklen_t* peer_length) override {
        if (!multishot_accept_) return FiberServer::accept_client(peer, peer_length);
        if (!acceptor_) acceptor_.emplace(listener());
        const int socket = acceptor_->accept();
        if (socket >= 0 && ::getpeername(socket, peer, peer_length) != 0) *peer_length = 0;
        return socket;
    }

    void serve_client(int socket) override {
        if (pool_) return serve_from_pool(socket);
        const auto buffer = std::make_unique_for_overwrite<char[]>(kBufferSize);
        for (;;) {
            const ssize_t n = fib::io::read(socket, buffer.get(), kBufferSize);
            if (n <= 0) return;
            if (fib::io::send_all(socket, buffer.get(), static_cast<std::size_t>(n)) < 0) return;
            bytes_ += static_cast<unsigned long long>(n);
        }
    }

private:
    // The bytes stay in the pool's buffer while they are sent: a client that
    // does not read holds one buffer, never more, and when all are out the
    // other clients' receives wait for one (their bytes wait in the socket).
    void serve_from_pool(int socket) {
        for (;;) {
            fib::io::ring::Lease chunk;
            const ssize_t n = fib::io::ring::receive(*pool_, socket, chunk);
            if (n <= 0) return;
            if (fib::io::send_all(socket, chunk.data(), chunk.size()) < 0) return;
            bytes_ += static_cast<unsigned long long>(n);
        }
    }

    fib::io::ring::BufferRing* pool_;
    const bool multishot_accept_;
    std::optional<fib::io::ring::Acceptor> acceptor_;
    unsigned long long bytes_ = 0;  // only this thread's fibers add to it
};

// --buffers N (a power of two from 1 to 32768) and --multishot-accept.
unsigned buffer_count = 0;
bool multishot_accept = false;
FlagResult ring_flags(const char* flag, const std::function<const char*()>& value) {
    if (std::strcmp(flag, "--multishot-accept") == 0) {
        multishot_accept = true;
        return {};
    }
    if (std::strcmp(flag, "--buffers") != 0) return {false};
    const char* text = value();
    char* end = nullptr;
    const long count = std::strtol(text, &end, 10);
    if (*end || count < 1 || count > 32768 || (count & (count - 1)))
        return {true, "--buffers wants a power of two from 1 to 32768"};
    buffer_count = static_cast<unsigned>(count);
    return {};
}

}  // namespace

int main(int argc, char** argv) {
    const int stop_fd = stop_signal_fd();
    const ServerFlags flags =
        parse_server_flags(argc, argv, {"completion_echo", kUsage, fib::poller_names(), ring_flags, 8011});
    raise_fd_limit();

    fib::FiberManager manager;
    fib::Waiter waiter(flags.backend);
    if ((buffer_count || multishot_accept) && !fib::io::ring::of_this_thread()) {
        std::fprintf(stderr, "completion_echo: %s needs a backend that runs operations on the ring "
                             "(uring, uring-batch, uring-ops); this one is %s\n",
                     buffer_count ? "--buffers" : "--multishot-accept", waiter.poller().name());
        return 2;
    }
    std::optional<fib::io::ring::BufferRing> pool;
    if (buffer_count) pool.emplace(buffer_count, static_cast<unsigned>(kBufferSize));
    std::optional<CompletionEcho> server;
    try {
        server.emplace(flags.bind, flags.port, pool ? &*pool : nullptr, multishot_accept);
    } catch (const std::exception& error) {
        std::fprintf(stderr, "completion_echo: %s\n", error.what());
        return 1;
    }
    std::printf("completion_echo: listening on %s:%u (backend %s, %s%s); Ctrl-C stops it\n", flags.bind,
                server->port(), waiter.poller().name(), pool ? "a pool of provided buffers" : "a buffer per client",
                multishot_accept ? ", multishot accept" : "");
    std::fflush(stdout);

    server->serve(stop_fd);

    std::printf("completion_echo: %s: served %llu clients, echoed %llu bytes\n", stop_signal_fd_name(stop_fd),
                static_cast<unsigned long long>(server->clients_served()), server->bytes_echoed());
    if (pool) std::printf("completion_echo: the pool ran dry %llu times\n", static_cast<unsigned long long>(pool->exhausted()));
    server.reset();  // its Acceptor before the Waiter; its clients' Leases ended before the pool
    return 0;
}
