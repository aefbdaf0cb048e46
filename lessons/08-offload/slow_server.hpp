// slow_server.hpp — lesson 8: an echo server whose requests may do blocking work.
//
// A client that sends "SLOW n" (at the start of a read) gets its bytes echoed
// after n milliseconds of blocking work: a stand-in for a getaddrinfo, a read
// from a slow disk, a CPU-heavy hash. Every other read is echoed at once. Run
// inline, that work blocks the thread, and every client of the server waits;
// offloaded, only the client that asked for it waits.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>

#include "../06-time-and-events/fiber_server.hpp"
#include "fib/thread_pool.hpp"

struct SlowServerOptions {
    const char* bind = "127.0.0.1";
    std::uint16_t port = 8003;
    fib::ThreadPool* pool = nullptr;  // where the slow work runs; nullptr: inline, blocking
    // The blocking work for "SLOW n"; by default the thread sleeps n ms (a test
    // passes work that waits for its signal instead).
    std::function<void(int milliseconds)> work = sleep_ms;

    static void sleep_ms(int milliseconds);
};

class SlowServer : public FiberServer {
public:
    explicit SlowServer(const SlowServerOptions& options);
    std::uint64_t slow_requests() const { return slow_.load(std::memory_order_relaxed); }

protected:
    void serve_client(int socket) override;

private:
    void slow_work(int milliseconds);

    SlowServerOptions options_;
    std::atomic<std::uint64_t> slow_{0};
};
