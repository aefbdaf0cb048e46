// io.cpp — lesson 11: lesson 6's I/O helpers, which run as io_uring operations when the Waiter has a ring.
//
// Replaces lesson 6's io.cpp from stage 11 on. On a thread whose Waiter runs
// on an io_uring (uring_poller.hpp), read and connect hand the whole call to
// the kernel and park until its CQE; write_all and send_all try first and
// hand over only what would block (uring_io.cpp); accept waits for readiness
// through the ring. On any other Poller they are lesson 6's, which said:
//
// Replaces lesson 4's io.cpp from stage 6 on: a wait that a cancel ended
// (revents 0, see cancel.hpp) makes the helper fail with ECANCELED.
#include "fib/io.hpp"

#include <poll.h>
#include <unistd.h>

#include <cerrno>

#include "fib/uring_io.hpp"
#include "fib/waiter.hpp"

namespace fib::io {
namespace {

bool would_block() { return errno == EAGAIN || errno == EWOULDBLOCK; }

// Waits for `fd`; true if the helper may try its call again. After POLLERR or
// POLLHUP it may: the call then reports the real error. After POLLNVAL it must
// not. The fd was closed while this fiber waited (io::close told the Waiter,
// which woke it), and another fiber may already have opened something that
// got the same number: trying again would read or write that file's bytes. So
// the helper fails with EBADF instead, and never touches the number again.
bool wait_for(int fd, short events, const char* what) {
    const short revents = Waiter::of_this_thread(what).wait(fd, events);
    if (revents & POLLNVAL) {
        errno = EBADF;
        return false;
    }
    if (revents == 0) {  // its fiber was cancelled
        errno = ECANCELED;
        return false;
    }
    return true;
}

// The loop shared by write_all and send_all: `put` makes one attempt.
template <class Put>
ssize_t put_all(int fd, const void* data, std::size_t size, Put put, const char* what) {
    const auto* bytes = static_cast<const char*>(data);
    std::size_t done = 0;
    while (done < size) {
        const ssize_t n = put(fd, bytes + done, size - done);
        if (n >= 0) {
            done += static_cast<std::size_t>(n);  // a partial write: go on with the rest
        } else if (would_block()) {
            if (!wait_for(fd, POLLOUT, what)) return -1;
        } else if (errno != EINTR) {
            return -1;
        }
    }
    return static_cast<ssize_t>(size);
}

}  // namespace

short wait(int fd, short events) { return Waiter::of_this_thread("fib::io::wait() had to wait").wait(fd, events); }

ssize_t read(int fd, void* buffer, std::size_t size) {
    if (UringPoller* uring = ring::of_this_thread()) return ring::read(*uring, fd, buffer, size, nullptr);
    for (;;) {
        const ssize_t n = ::read(fd, buffer, size);
        if (n >= 0 || (!would_block() && errno != EINTR)) return n;
        if (errno != EINTR && !wait_for(fd, POLLIN, "fib::io::read() had to wait")) return -1;
    }
}

ssize_t write_all(int fd, const void* data, std::size_t size) {
    if (UringPoller* uring = ring::of_this_thread()) return ring::put_all(*uring, fd, data, size, false, nullptr);
    return put_all(fd, data, size, ::write, "fib::io::write_all() had to wait");
}

ssize_t send_all(int socket, const void* data, std::size_t size) {
    if (UringPoller* uring = ring::of_this_thread()) return ring::put_all(*uring, socket, data, size, true, nullptr);
    auto send = [](int fd, const void* bytes, std::size_t count) {
        return ::send(fd, bytes, count, MSG_NOSIGNAL);
    };
    return put_all(socket, data, size, send, "fib::io::send_all() had to wait");
}

int close(int fd) {
    if (Waiter* waiter = Waiter::current()) waiter->forget(fd);
    return ::close(fd);
}

int accept(int listener, sockaddr* address, socklen_t* length) {
    // On a ring too, accept stays lesson 4's: try, then wait for readiness.
    // An ACCEPT operation takes the fd limit when it is prepared (io_uring's
    // io_accept_prep reads RLIMIT_NOFILE), so a server whose limit is
    // lowered while its accept waits would get an fd above it. An accept
    // holds no buffer: it loses nothing by waiting this way.
    for (;;) {
        const int fd = ::accept4(listener, address, length, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd >= 0) return fd;
        if (would_block()) {
            if (!wait_for(listener, POLLIN, "fib::io::accept() had to wait")) return -1;
        } else if (errno != EINTR && errno != ECONNABORTED) {
            return -1;
        }
    }
}

int connect(int socket, const sockaddr* address, socklen_t length) {
    if (UringPoller* uring = ring::of_this_thread()) {
        // On a non-blocking socket the kernel may hand back EINPROGRESS
        // (the handshake goes on): then wait for it as lesson 4 does.
        if (ring::connect(*uring, socket, address, length) == 0) return 0;
        if (errno != EINPROGRESS) return -1;
    } else {
        if (::connect(socket, address, length) == 0) return 0;
        if (errno != EINPROGRESS && errno != EINTR) return -1;
    }
    // The handshake goes on in the kernel; the socket turns writable when it
    // ends, and SO_ERROR says how.
    if (!wait_for(socket, POLLOUT, "fib::io::connect() had to wait")) return -1;
    int error = 0;
    socklen_t error_length = sizeof error;
    if (::getsockopt(socket, SOL_SOCKET, SO_ERROR, &error, &error_length) < 0) return -1;
    if (error == 0) return 0;
    errno = error;
    return -1;
}

}  // namespace fib::io
