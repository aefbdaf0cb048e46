// shard_echo.hpp — lesson 9: ShardEchoServer, lesson 4's echo on one thread of a Cluster, with
// a CPU cost per request.
//
//   cluster.start([&](std::size_t i) {
//       ShardEchoServer server(std::move(listeners[i]), {.work = 20us});
//       serve_until_stopped(server);
//   });
//
// Each thread runs one of these on its own SO_REUSEPORT listener: the kernel
// spreads the connections, and each is served to the end by the thread that
// accepted it. `work` burns that much CPU for every read before its echo is
// sent: a stand-in for parsing and computing a reply, so that the server, not
// the loopback, is what limits a small machine (make bench-cluster).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

#include "../04-echo-server/echo_connection.hpp"
#include "../06-time-and-events/fiber_server.hpp"
#include "fib/timer_heap.hpp"

struct ShardEchoOptions {
    std::chrono::microseconds work{0};                              // CPU per read, spun
    fib::Clock::duration write_timeout = std::chrono::seconds(30);  // a client that stops reading
};

class ShardEchoServer : public FiberServer {
public:
    ShardEchoServer(fib::UniqueFd listener, const ShardEchoOptions& options);

    // Readable from any thread while serve() runs.
    std::uint64_t bytes_echoed() const { return bytes_.load(std::memory_order_relaxed); }

protected:
    void serve_client(int socket) override;

private:
    class Connection;

    ShardEchoOptions options_;
    SharedReadBuffer read_buffer_;  // one per thread, as each thread has its own server
    std::atomic<std::uint64_t> bytes_{0};
};
