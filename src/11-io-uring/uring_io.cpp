// uring_io.cpp — lesson 11: read, write, send, accept and connect as one SQE and one CQE each.
#include "fib/uring_io.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstdint>

#include "fib/cancel.hpp"
#include "fib/waiter.hpp"

namespace fib::io::ring {
namespace {

// The most one read or write moves at once, as for read(2).
constexpr std::size_t kMaxChunk = 0x7ffff000;

// One operation, its record in this frame (see run() in uring_io.hpp).
template <class Fill>
long call(UringPoller& ring, int fd, std::uint8_t opcode, const char* what, const Clock::time_point* deadline,
          Fill fill) {
    UringOp op;
    op.fd = fd;
    op.what = what;
    return run(ring, op, opcode, deadline, fill);
}

}  // namespace

UringPoller* of_this_thread() {
    Waiter* waiter = Waiter::current();
    return waiter ? waiter->poller().uring() : nullptr;
}

// IORING_OP_READ at offset -1: the file's position, as read(2); a socket or a
// pipe has none. The SQE's fields are the kernel header's names.
ssize_t read(UringPoller& ring, int fd, void* buffer, std::size_t size, const Clock::time_point* deadline) {
    for (;;) {
        const long n = call(ring, fd, IORING_OP_READ, "fib::io::read", deadline, [&](io_uring_sqe& sqe) {
            sqe.addr = reinterpret_cast<std::uintptr_t>(buffer);
            sqe.len = static_cast<unsigned>(size > kMaxChunk ? kMaxChunk : size);
            sqe.off = ~std::uint64_t{0};
        });
        if (n >= 0 || errno != EINTR) return n;
    }
}

ssize_t put_all(UringPoller& ring, int fd, const void* data, std::size_t size, bool socket,
                const Clock::time_point* deadline) {
    const auto* bytes = static_cast<const char*>(data);
    std::size_t done = 0;
    while (done < size) {
        const std::size_t chunk = size - done > kMaxChunk ? kMaxChunk : size - done;
        // A write is tried first, as lesson 4 does: one that the socket has
        // room for never waits, and costs one system call instead of an SQE,
        // a park and a wake. Only what would block becomes an operation.
        const ssize_t now = socket ? ::send(fd, bytes + done, chunk, MSG_NOSIGNAL | MSG_DONTWAIT)
                                   : ::write(fd, bytes + done, chunk);
        if (now >= 0) {
            done += static_cast<std::size_t>(now);
            continue;
        }
        if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) return -1;
        if (errno == EINTR) continue;
        const long n = call(ring, fd, socket ? IORING_OP_SEND : IORING_OP_WRITE,
                            socket ? "fib::io::send_all" : "fib::io::write_all", deadline, [&](io_uring_sqe& sqe) {
                                sqe.addr = reinterpret_cast<std::uintptr_t>(bytes + done);
                                sqe.len = static_cast<unsigned>(chunk);
                                if (socket) sqe.msg_flags = MSG_NOSIGNAL;
                                else sqe.off = ~std::uint64_t{0};
                            });
        if (n >= 0) done += static_cast<std::size_t>(n);
        else if (errno != EINTR) return -1;
    }
    return static_cast<ssize_t>(size);
}

int connect(UringPoller& ring, int socket, const sockaddr* address, socklen_t length) {
    return static_cast<int>(call(ring, socket, IORING_OP_CONNECT, "fib::io::connect", nullptr, [&](io_uring_sqe& sqe) {
        sqe.addr = reinterpret_cast<std::uintptr_t>(address);
        sqe.off = length;
    }));
}

}  // namespace fib::io::ring
