// udp_echo.cpp — lesson 6: one fiber, one UDP socket: wait for a datagram or the stop, echo it back.
#include "udp_echo.hpp"

#include <poll.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <system_error>

#include "fib/io.hpp"
#include "fib/tcp.hpp"
#include "fib/wait_any.hpp"

namespace {

fib::UniqueFd bound_udp_socket(const char* bind, std::uint16_t port) {
    const fib::tcp::Address address = fib::tcp::make_address(bind, port);
    fib::UniqueFd socket(::socket(address.get()->sa_family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    if (!socket || ::bind(socket.get(), address.get(), address.length) < 0)
        throw std::system_error(errno, std::generic_category(),
                                std::string("UDP on ") + bind + ":" + std::to_string(port));
    return socket;
}

}  // namespace

UdpEchoServer::UdpEchoServer(const EchoOptions& options)
    : options_(options),
      socket_(bound_udp_socket(options.bind, options.port)),
      port_(fib::tcp::local_port(socket_.get())),
      datagram_(64 * 1024) {}

void UdpEchoServer::serve(int stop_fd) {
    for (;;) {
        const fib::Ready ready = fib::wait_any({{socket_.get(), POLLIN}, {stop_fd, POLLIN}});
        if (ready.index == 1) return;
        echo_pending();
    }
}

// Every datagram queued now, each sent back to its sender, into a buffer that
// holds the largest one (64 KiB: a fiber's whole default stack, so not a local).
void UdpEchoServer::echo_pending() {
    char* datagram = datagram_.data();
    for (;;) {
        sockaddr_storage peer{};
        socklen_t peer_length = sizeof peer;
        const ssize_t received = ::recvfrom(socket_.get(), datagram, datagram_.size(), 0,
                                            reinterpret_cast<sockaddr*>(&peer), &peer_length);
        if (received < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK) return;
            if (errno == EINTR) continue;
            // An ICMP error from an earlier send (ECONNREFUSED) lands here: not ours to stop on.
            if (!options_.quiet) std::fprintf(stderr, "echo_server: recvfrom: %s\n", std::strerror(errno));
            continue;
        }
        if (send_back(datagram, static_cast<std::size_t>(received), peer, peer_length)) {
            datagrams_.fetch_add(1, std::memory_order_relaxed);
            bytes_.fetch_add(static_cast<std::uint64_t>(received), std::memory_order_relaxed);
        }
    }
}

// Waits for room in the send buffer rather than drop the reply; false only
// when the kernel refuses that peer (unreachable: serve the others).
bool UdpEchoServer::send_back(const char* datagram, std::size_t size, const sockaddr_storage& peer,
                              socklen_t peer_length) {
    for (;;) {
        if (::sendto(socket_.get(), datagram, size, 0, reinterpret_cast<const sockaddr*>(&peer),
                     peer_length) >= 0)
            return true;
        if (errno == EAGAIN || errno == EWOULDBLOCK)
            fib::io::wait(socket_.get(), POLLOUT);
        else if (errno != EINTR)
            return false;
    }
}
