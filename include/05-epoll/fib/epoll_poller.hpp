// epoll_poller.hpp — lesson 5: the Waiter's epoll backend.
//
// poll(2) hands the kernel the whole fd list on every call, and the kernel
// checks every fd: the cost grows with the connections, busy or idle. epoll
// keeps the interest set in the kernel, which keeps a list of the ready ones;
// epoll_wait returns only those.
//
// The choices (see src/epoll_poller.cpp for the details):
// - Level-triggered, like poll, so Waiter::wait keeps lesson 4's meaning
//   ("sleep until the fd is ready"), even for an fd that is ready already.
// - Interest is added when a fiber first waits and then left in place: a fiber
//   that waits for the same events again (the echo loop) costs no epoll_ctl.
//   It is narrowed only when an event arrives that nobody waits for.
// - Every registration carries the fd and a generation number; forget()
//   (io::close) bumps the generation, so an event for a closed fd can never
//   wake a fiber waiting on a new fd that reuses the number.
// - After fork(), parent and child share the epoll instance: registrations
//   one makes show in the other, and an event wakes whichever waits first. So
//   a child may not use a Waiter its parent made: it stops with a message.
//   (poll keeps its list in the process's own memory: a child's copy is its own.)
#pragma once

#include <cstdint>
#include <memory>

#include "fib/poller.hpp"

namespace fib {

std::unique_ptr<Poller> make_epoll_poller();

// The epoll_ctl calls `poller` has made, if it is an epoll Poller (0 for
// poll, which passes its whole list on every call instead):
// fib::epoll_ctl_calls(waiter.poller()).
std::uint64_t epoll_ctl_calls(const Poller& poller);

}  // namespace fib
