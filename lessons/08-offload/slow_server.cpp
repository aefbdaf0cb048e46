// slow_server.cpp — lesson 8: each client's loop, and its slow work inline or offloaded.
#include "slow_server.hpp"

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <thread>

#include "fib/fiber.hpp"
#include "fib/io.hpp"
#include "fib/offload.hpp"

SlowServer::SlowServer(const SlowServerOptions& options)
    : FiberServer("slow_server", options.bind, options.port), options_(options) {}

void SlowServerOptions::sleep_ms(int milliseconds) {
    std::this_thread::sleep_for(std::chrono::milliseconds(milliseconds));
}

// The blocking work blocks the thread that runs it. Inline, that thread is the
// server's only one; offloaded, it is a worker, and only this fiber waits.
void SlowServer::slow_work(int milliseconds) {
    slow_.fetch_add(1, std::memory_order_relaxed);
    if (options_.pool)
        fib::offload(*options_.pool, [this, milliseconds] { options_.work(milliseconds); });
    else
        options_.work(milliseconds);
}

// A buffer of the connection's own (the fiber parks while its bytes wait for
// the slow work, so lesson 4's shared read buffer would not do), on the heap:
// in the fiber's frame it would cost resident pages for every connection.
void SlowServer::serve_client(int socket) {
    constexpr std::size_t kSize = 4096;
    const std::unique_ptr<char[]> buffer = std::make_unique<char[]>(kSize);
    for (;;) {
        const ssize_t got = fib::io::read(socket, buffer.get(), kSize);
        if (got <= 0) return;  // end of file, an error, or the server stopping
        if (got > 5 && std::memcmp(buffer.get(), "SLOW ", 5) == 0) {
            try {
                slow_work(std::atoi(buffer.get() + 5));
            } catch (const std::system_error&) {
                return;  // cancelled: the server is stopping
            }
        }
        if (fib::io::send_all(socket, buffer.get(), static_cast<std::size_t>(got)) < 0) return;
    }
}
