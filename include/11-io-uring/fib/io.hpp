// io.hpp — lesson 11: lesson 4's I/O helpers, whose buffer a ring backend lends to the kernel while they wait.
//
// Replaces lesson 4's io.hpp from stage 11 on, adding one rule. On a Waiter
// that runs on an io_uring (lesson 11's "uring", "uring-ops", "uring-batch"),
// read, and a write_all or send_all that would block, hand the call to the
// kernel and park until it completes: read parks even when bytes are there,
// and the buffer belongs to the kernel for the whole wait, until the call
// returns. So a buffer that several fibers share may not be passed to them
// (a read into it may be written while its fiber is parked, by the kernel,
// for another fiber's read too); wait for readiness (io::wait) and call
// read(2) instead, as lesson 4's echo loop does. A cancel, a deadline or a
// close still ends the call as below, but only after the kernel has let go.
// Lesson 4's said:
//
// read, write, accept and connect that block only the calling fiber.
//
// Each works on a non-blocking fd (O_NONBLOCK, SOCK_NONBLOCK) and behaves like
// the system call it is named after, except where that call would fail with
// EAGAIN: then it waits in the thread's Waiter until the fd is ready and tries
// again, so other fibers run meanwhile. Errors are reported as the system call
// reports them: -1 with errno set (ECONNRESET, EPIPE, EMFILE, ...). One more:
// if the fd is closed through io::close while the call waits, the call fails
// with EBADF and does not try again, since by then another fiber may have
// opened a file that got the same number.
//
// A blocking fd works too, but a call on it that must wait blocks the whole
// thread, every fiber with it.
#pragma once

#include <sys/socket.h>
#include <sys/types.h>

#include <cstddef>

namespace fib::io {

// Blocks the running fiber until `fd` is ready for `events` (see Waiter::wait);
// returns the revents. Stops the program with a clear message if this thread
// has no Waiter.
short wait(int fd, short events);

// Up to `size` bytes into `buffer`; 0 at end of file.
ssize_t read(int fd, void* buffer, std::size_t size);

// All `size` bytes, however many write() calls that takes: returns `size`, or
// -1 on an error (some bytes may have been written before it).
ssize_t write_all(int fd, const void* data, std::size_t size);

// write_all() for a socket, with MSG_NOSIGNAL: a peer that has gone away gives
// EPIPE here instead of a SIGPIPE that would kill the process.
ssize_t send_all(int socket, const void* data, std::size_t size);

// Closes `fd`, first telling this thread's Waiter (if any) to forget it: a
// fiber still waiting on it wakes with POLLNVAL, and a Poller that remembers
// fds cannot mistake a new fd that reuses the number for the old one.
// UniqueFd closes through here. So an fd a fiber has waited on is closed on
// that fiber's thread: a close on another thread tells that thread's Waiter,
// not the one that watches the fd (each thread's manager has its own).
int close(int fd);

// accept4() with SOCK_NONBLOCK | SOCK_CLOEXEC: the new socket is ready for
// these helpers. Retries a connection aborted before it was accepted.
int accept(int listener, sockaddr* address, socklen_t* length);

// connect() on a non-blocking socket: waits for the handshake to end and
// returns 0, or -1 with the connection's error (ECONNREFUSED, ...) in errno.
int connect(int socket, const sockaddr* address, socklen_t length);

}  // namespace fib::io
