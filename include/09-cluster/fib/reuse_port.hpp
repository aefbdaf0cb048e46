// reuse_port.hpp — lesson 9: listening sockets that share one port, one per thread (SO_REUSEPORT).
//
//   fib::UniqueFd first = fib::tcp::listen_reuse_port("127.0.0.1", 0);   // the kernel picks
//   std::uint16_t port = fib::tcp::local_port(first.get());
//   fib::UniqueFd second = fib::tcp::listen_reuse_port("127.0.0.1", port);  // the same port
//
// With SO_REUSEPORT set on each before bind(), several sockets of one user
// may listen on the same address and port. The kernel then keeps one accept
// queue per socket and puts each new connection in one of them, chosen by a
// hash of the connection's addresses and ports: each thread accepts from its
// own queue, with no lock and no thundering herd, and a connection stays on
// the thread that accepted it. The hash spreads many connections evenly, and
// a few unevenly: it knows nothing of how busy each thread is.
//
// A socket that closes takes its queue with it: the connections waiting in it
// (handshake done, not accepted yet) are reset, not moved to the others.
#pragma once

#include <cstdint>

#include "fib/tcp.hpp"

namespace fib::tcp {

// tcp::listen with SO_REUSEPORT as well as SO_REUSEADDR. Throws
// std::system_error saying which address could not be used.
UniqueFd listen_reuse_port(const char* address, std::uint16_t port, int backlog = SOMAXCONN);

}  // namespace fib::tcp
