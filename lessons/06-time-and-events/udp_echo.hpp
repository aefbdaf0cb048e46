// udp_echo.hpp — lesson 6: a UDP echo server on the same Waiter (echo_server --udp).
//
//   UdpEchoServer server({.port = 0});
//   server.serve(stop_fd);   // from a fiber: echoes datagrams until stop_fd turns readable
//
// The executor/reactor article's example. UDP has no connections, so there is
// no fiber per client: one fiber owns the socket, and wait_any lets it wait for
// a datagram and for the stop signal at once. Each datagram goes back whole to
// the address it came from; when the socket's send buffer is full, the fiber
// waits for room instead of dropping the reply.
#pragma once

#include <sys/socket.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "../04-echo-server/echo_server.hpp"
#include "fib/unique_fd.hpp"

class UdpEchoServer {
public:
    // Binds at once; throws std::system_error if it cannot.
    explicit UdpEchoServer(const EchoOptions& options);

    std::uint16_t port() const { return port_; }
    void serve(int stop_fd);

    // Readable from any thread while serve() runs.
    std::uint64_t datagrams_echoed() const { return datagrams_.load(std::memory_order_relaxed); }
    std::uint64_t bytes_echoed() const { return bytes_.load(std::memory_order_relaxed); }

private:
    void echo_pending();
    bool send_back(const char* datagram, std::size_t size, const sockaddr_storage& peer,
                   socklen_t peer_length);

    EchoOptions options_;
    fib::UniqueFd socket_;
    std::uint16_t port_;
    std::vector<char> datagram_;  // one datagram at a time
    std::atomic<std::uint64_t> datagrams_{0};
    std::atomic<std::uint64_t> bytes_{0};
};
