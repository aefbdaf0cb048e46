// scoped_server.hpp — lesson 12: lesson 6's FiberServer again, as a scope of its connections.
//
//   class Echo : public ScopedServer {
//       void serve_client(int socket) override;   // on the client's own fiber
//   };
//   Echo server("echo", "127.0.0.1", 0);
//   server.serve(stop_fd);                         // until stop_fd turns readable
//
// FiberServer (lessons/06-time-and-events/fiber_server.cpp) built a nursery by
// hand: a list of client fibers, a `stopping_` flag for a client accepted but
// not started, a loop that cancels each, a CondVar and a shielded wait for the
// last to leave, and an acceptor fiber joined on the way out. Here all of that
// is fib::scope: the acceptor and every client are children of one scope, and
// the stop is one cancel of it. What stays is what is about serving: one
// client's failure must not stop the others, so each client's exception is
// caught at its own boundary and logged (a scope's first exception cancels
// the siblings, which for a server's clients is the wrong rule).
#pragma once

#include <sys/socket.h>

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "fib/scope.hpp"
#include "fib/unique_fd.hpp"

class ScopedServer {
public:
    // Binds and listens at once; throws std::system_error if it cannot.
    ScopedServer(const char* program, const char* bind, std::uint16_t port);
    // Serves on a listening socket made elsewhere (one per thread, SO_REUSEPORT: lesson 9).
    ScopedServer(const char* program, fib::UniqueFd listener);
    virtual ~ScopedServer() = default;
    ScopedServer(const ScopedServer&) = delete;
    ScopedServer& operator=(const ScopedServer&) = delete;

    std::uint16_t port() const { return port_; }

    // From a fiber of a thread with a FiberManager and a Waiter: accept and
    // serve until `stop_fd` turns readable, or the calling fiber is cancelled;
    // returns once every client fiber has ended. Call it once.
    void serve(int stop_fd);

    // Readable from any thread while serve() runs.
    std::uint64_t clients_served() const { return served_.load(std::memory_order_relaxed); }
    std::size_t clients_connected() const { return open_.load(std::memory_order_relaxed); }

protected:
    // One client, on its own fiber. When the server stops, its waits end with
    // ECANCELED or cancelled(). The socket is closed after it returns.
    virtual void serve_client(int socket) = 0;
    const char* program() const { return program_; }

private:
    void accept_clients(fib::Scope& connections);
    void run_client(fib::UniqueFd socket);

    const char* program_;
    fib::UniqueFd listener_;
    std::uint16_t port_;
    std::atomic<std::uint64_t> served_{0};
    std::atomic<std::size_t> open_{0};
};
