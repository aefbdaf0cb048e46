// uring_io.hpp — lesson 11: fib::io's calls as io_uring operations, for io.cpp and the timed calls.
//
// Each behaves as the fib::io call of the same name (io.hpp, wait_any.hpp)
// and runs on `ring`, the calling thread's: one SQE, a park, the CQE. Each
// follows the ownership protocol of uring_poller.hpp: it returns only once
// the kernel has let go of its buffer, however it ends.
#pragma once

#include <sys/socket.h>
#include <sys/types.h>

#include <cstddef>

#include "fib/timer_heap.hpp"
#include "fib/uring_poller.hpp"

namespace fib::io::ring {

// The calling thread's UringPoller, if its Waiter runs fib::io as operations.
UringPoller* of_this_thread();

// With `deadline` (nullptr: none), the call gives up when it passes: -1,
// errno ETIMEDOUT, after the kernel has let go.
ssize_t read(UringPoller& ring, int fd, void* buffer, std::size_t size, const Clock::time_point* deadline);
// write_all (socket false: IORING_OP_WRITE) or send_all (socket true: SEND,
// MSG_NOSIGNAL): one operation per partial write until all `size` are out.
ssize_t put_all(UringPoller& ring, int fd, const void* data, std::size_t size, bool socket,
                const Clock::time_point* deadline);
// 0, or -1 with errno; EINPROGRESS when the kernel left the handshake going
// (a non-blocking socket): the caller then waits for POLLOUT.
int connect(UringPoller& ring, int socket, const sockaddr* address, socklen_t length);

}  // namespace fib::io::ring
