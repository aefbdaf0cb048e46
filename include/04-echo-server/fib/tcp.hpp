// tcp.hpp — lesson 4: setting up TCP sockets for the I/O helpers: listen, connect, names.
//
// Addresses are numeric IPv4 or IPv6 ("127.0.0.1", "::1", "0.0.0.0"); no DNS.
// Every socket made here is SOCK_NONBLOCK | SOCK_CLOEXEC.
#pragma once

#include <sys/socket.h>

#include <cstdint>

#include "fib/unique_fd.hpp"

namespace fib::tcp {

// A socket address and its length, filled from a numeric address and a port.
struct Address {
    sockaddr_storage storage{};
    socklen_t length = 0;
    const sockaddr* get() const { return reinterpret_cast<const sockaddr*>(&storage); }
};
// Throws std::invalid_argument if `address` is not a numeric IPv4/IPv6 address.
Address make_address(const char* address, std::uint16_t port);

// "127.0.0.1:8001" or "[::1]:8001": how messages show an address.
struct AddressText {
    char text[64];
};
AddressText to_text(const sockaddr* address);
AddressText local_address_of(int socket);

// A listening socket on address:port (port 0: the kernel picks a free one;
// local_port() says which). SO_REUSEADDR, so a restarted server can listen at
// once. Throws std::system_error saying which address could not be used.
UniqueFd listen(const char* address, std::uint16_t port, int backlog = SOMAXCONN);
std::uint16_t local_port(int socket);

// Turns Nagle's algorithm off: small writes go out at once. A server that
// answers one request with two writes (an echo bigger than its buffer) would
// otherwise hold the second back until the peer's delayed ACK, ~40 ms later.
void set_no_delay(int socket);

// Connects from a fiber (waiting in the Waiter during the handshake). Returns
// an invalid UniqueFd with errno set on failure.
UniqueFd connect(const char* address, std::uint16_t port);

}  // namespace fib::tcp
