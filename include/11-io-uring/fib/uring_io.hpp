// uring_io.hpp — lesson 11: fib::io's calls as io_uring operations, for io.cpp and the timed calls.
//
// Each behaves as the fib::io call of the same name (io.hpp, wait_any.hpp)
// and runs on `ring`, the calling thread's: one SQE, a park, the CQE. Each
// follows the ownership protocol of uring_poller.hpp: it returns only once
// the kernel has let go of its buffer, however it ends.
#pragma once

#include <sys/socket.h>
#include <sys/types.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>

#include "fib/cancel.hpp"
#include "fib/timer_heap.hpp"
#include "fib/uring_poller.hpp"
#include "fib/waiter.hpp"

namespace fib::io::ring {

// The calling thread's UringPoller, if its Waiter runs fib::io as operations.
UringPoller* of_this_thread();

// One operation from SQE to CQE on the running fiber, the shape of every call
// here: `op` has its fd and `what`; `fill(io_uring_sqe&)` writes the opcode's
// own fields. Returns the CQE's result, or -1 with errno: a result the kernel
// produced before a cancel caught up with it is kept (bytes read or sent are
// real, and are nowhere else); otherwise the reason the caller gave up wins
// over the -ECANCELED the kernel reports: EBADF when io::close cancelled it,
// ECANCELED or ETIMEDOUT when the fiber did. A fiber already cancelled starts
// nothing. `op` holds the CQE's flags afterwards.
template <class Fill>
long run(UringPoller& ring, UringOp& op, std::uint8_t opcode, const Clock::time_point* deadline, Fill fill) {
    if (this_fiber::cancelled()) {
        errno = ECANCELED;
        return -1;
    }
    fill(ring.prepare(op, opcode));
    Waiter& waiter = *Waiter::current();
    waiter.operation_started();
    ring.complete(op, deadline);
    waiter.operation_ended();
    if (op.result >= 0) return op.result;
    errno = op.fd_closed ? EBADF : op.gave_up ? op.gave_up : -op.result;
    return -1;
}

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
