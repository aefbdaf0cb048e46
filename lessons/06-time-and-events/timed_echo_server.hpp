// timed_echo_server.hpp — lesson 6: lesson 4's echo on the FiberServer skeleton, with a deadline
// each way.
//
//   TimedEchoServer server({.port = 0, .idle_timeout = 30s});   // echo_server --idle-timeout 30
//   server.serve(stop_fd);
//
// Each client's fiber runs lesson 4's echo loop (EchoConnection), with its
// two blocking steps given deadlines:
//
//   receive    a client silent for idle_timeout is closed (default: never;
//              an idle connection costs a page and an fd)
//   send_rest  a client that has not taken its echo within write_timeout has
//              stopped reading: it is closed, with a reset, so the kernel
//              drops the megabytes it held for it (default 30 s)
//
// Without the second, a client that sends and never reads pins a fiber, an
// fd and its socket buffers for ever: its fiber sits in send_all, where an
// idle timeout on reads never looks. The stop is FiberServer's: a cancel ends
// whichever wait each client is in.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

#include "../04-echo-server/echo_connection.hpp"
#include "fib/timer_heap.hpp"
#include "fiber_server.hpp"

struct TimedEchoOptions {
    const char* bind = "127.0.0.1";  // numeric IPv4/IPv6; 0.0.0.0 only when asked
    std::uint16_t port = 8001;       // 0: any free port, see port()
    bool quiet = false;              // no connect/disconnect log on stderr
    fib::Clock::duration idle_timeout = fib::Clock::duration::max();  // max: never
    fib::Clock::duration write_timeout = std::chrono::seconds(30);
};

class TimedEchoServer : public FiberServer {
public:
    // Binds and listens at once; throws std::system_error if it cannot.
    explicit TimedEchoServer(const TimedEchoOptions& options);

    // Readable from any thread, e.g. a test's, while serve() runs.
    std::uint64_t bytes_echoed() const { return bytes_.load(std::memory_order_relaxed); }
    std::uint64_t idle_closed() const { return idle_closed_.load(std::memory_order_relaxed); }
    std::uint64_t slow_closed() const { return slow_closed_.load(std::memory_order_relaxed); }

protected:
    void serve_client(int socket) override;

private:
    class Connection;  // EchoConnection with the deadlines

    TimedEchoOptions options_;
    SharedReadBuffer read_buffer_;  // every client fiber reads here (the server has one thread)
    std::atomic<std::uint64_t> bytes_{0};
    std::atomic<std::uint64_t> idle_closed_{0};
    std::atomic<std::uint64_t> slow_closed_{0};
};
