// tcp.cpp — lesson 4: TCP socket set-up: numeric addresses, listen, connect.
#include "fib/tcp.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>
#include <system_error>

#include "fib/io.hpp"

namespace fib::tcp {

Address make_address(const char* address, std::uint16_t port) {
    Address result;
    auto* v4 = reinterpret_cast<sockaddr_in*>(&result.storage);
    auto* v6 = reinterpret_cast<sockaddr_in6*>(&result.storage);
    if (::inet_pton(AF_INET, address, &v4->sin_addr) == 1) {
        v4->sin_family = AF_INET;
        v4->sin_port = htons(port);
        result.length = sizeof *v4;
    } else if (::inet_pton(AF_INET6, address, &v6->sin6_addr) == 1) {
        v6->sin6_family = AF_INET6;
        v6->sin6_port = htons(port);
        result.length = sizeof *v6;
    } else {
        throw std::invalid_argument(std::string("not a numeric IPv4 or IPv6 address: ") + address);
    }
    return result;
}

AddressText to_text(const sockaddr* address) {
    AddressText result{};
    char host[INET6_ADDRSTRLEN] = "?";
    if (address->sa_family == AF_INET) {
        const auto* v4 = reinterpret_cast<const sockaddr_in*>(address);
        ::inet_ntop(AF_INET, &v4->sin_addr, host, sizeof host);
        std::snprintf(result.text, sizeof result.text, "%s:%u", host, ntohs(v4->sin_port));
    } else if (address->sa_family == AF_INET6) {
        const auto* v6 = reinterpret_cast<const sockaddr_in6*>(address);
        ::inet_ntop(AF_INET6, &v6->sin6_addr, host, sizeof host);
        std::snprintf(result.text, sizeof result.text, "[%s]:%u", host, ntohs(v6->sin6_port));
    } else {
        std::snprintf(result.text, sizeof result.text, "(address family %d)", address->sa_family);
    }
    return result;
}

AddressText local_address_of(int socket) {
    sockaddr_storage storage{};
    socklen_t length = sizeof storage;
    ::getsockname(socket, reinterpret_cast<sockaddr*>(&storage), &length);
    return to_text(reinterpret_cast<const sockaddr*>(&storage));
}

UniqueFd listen(const char* address, std::uint16_t port, int backlog) {
    const Address where = make_address(address, port);
    auto fail = [&](const char* step) {
        throw std::system_error(errno, std::generic_category(),
                                std::string(step) + " " + address + ":" + std::to_string(port));
    };
    UniqueFd listener(::socket(where.storage.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    if (!listener) fail("socket for");
    const int on = 1;
    if (::setsockopt(listener.get(), SOL_SOCKET, SO_REUSEADDR, &on, sizeof on) < 0)
        fail("SO_REUSEADDR on");
    if (::bind(listener.get(), where.get(), where.length) < 0) fail("cannot bind");
    if (::listen(listener.get(), backlog) < 0) fail("cannot listen on");
    return listener;
}

std::uint16_t local_port(int socket) {
    sockaddr_storage storage{};
    socklen_t length = sizeof storage;
    if (::getsockname(socket, reinterpret_cast<sockaddr*>(&storage), &length) < 0) return 0;
    if (storage.ss_family == AF_INET6)
        return ntohs(reinterpret_cast<const sockaddr_in6*>(&storage)->sin6_port);
    return ntohs(reinterpret_cast<const sockaddr_in*>(&storage)->sin_port);
}

void set_no_delay(int socket) {
    const int on = 1;
    ::setsockopt(socket, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
}

UniqueFd connect(const char* address, std::uint16_t port) {
    const Address where = make_address(address, port);
    UniqueFd socket(::socket(where.storage.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    if (!socket) return socket;
    if (io::connect(socket.get(), where.get(), where.length) < 0) {
        const int error = errno;
        socket.reset();
        errno = error;
    }
    return socket;
}

}  // namespace fib::tcp
