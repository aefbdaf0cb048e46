// reuse_port.cpp — lesson 9: a listening socket with SO_REUSEPORT.
#include "fib/reuse_port.hpp"

#include <sys/socket.h>

#include <cerrno>
#include <string>
#include <system_error>

namespace fib::tcp {

// tcp::listen's steps (lesson 4), with the option both must set before bind():
// a socket without it, listening first, keeps the port to itself.
UniqueFd listen_reuse_port(const char* address, std::uint16_t port, int backlog) {
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
    if (::setsockopt(listener.get(), SOL_SOCKET, SO_REUSEPORT, &on, sizeof on) < 0)
        fail("SO_REUSEPORT on");
    if (::bind(listener.get(), where.get(), where.length) < 0) fail("cannot bind");
    if (::listen(listener.get(), backlog) < 0) fail("cannot listen on");
    return listener;
}

}  // namespace fib::tcp
