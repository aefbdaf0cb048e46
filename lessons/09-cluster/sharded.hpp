// sharded.hpp — lesson 9: what the cluster programs share: a listener per thread, serving until
// the stop, and the stop signal.
//
//   std::vector<fib::UniqueFd> listeners = listen_on_every_thread("127.0.0.1", 8004, 2);
//   cluster.start([&](std::size_t i) { MyServer s(std::move(listeners[i])); serve_until_stopped(s); });
//   const char* why = wait_for_stop_signal(stop_fd);    // the program's own thread, not a fiber
//   cluster.stop();
//
// The listeners are all made before any thread starts, on the program's own
// thread: a port that cannot be had is one error at start, not one per thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "../06-time-and-events/fiber_server.hpp"
#include "fib/unique_fd.hpp"

// `threads` sockets listening on bind:port with SO_REUSEPORT. With port 0 the
// first gets a free port from the kernel and the others take the same.
// Throws std::system_error if one cannot be had.
std::vector<fib::UniqueFd> listen_on_every_thread(const char* bind, std::uint16_t port,
                                                  std::size_t threads);

// FiberServer::serve until the calling fiber is cancelled (Cluster::stop
// cancels each thread's main): serve() also returns when that happens.
void serve_until_stopped(FiberServer& server);

// On the program's own thread: blocks until SIGINT or SIGTERM makes the
// signalfd readable; "SIGINT" or "SIGTERM".
const char* wait_for_stop_signal(int stop_fd);
