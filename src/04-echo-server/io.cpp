// io.cpp — lesson 4: the fiber-aware I/O helpers: try the call; on EAGAIN, wait in the Waiter.
#include "fib/io.hpp"

#include <poll.h>
#include <unistd.h>

#include <cerrno>

#include "fib/fatal.hpp"
#include "fib/waiter.hpp"

namespace fib::io {
namespace {

bool would_block() { return errno == EAGAIN || errno == EWOULDBLOCK; }

// Whatever poll says (even POLLERR or POLLHUP), the helpers below retry their
// call after the wait, and the call then reports the real error.
short wait_for(int fd, short events, const char* operation) {
    Waiter* waiter = Waiter::current();
    if (!waiter)
        fatal("fib::io::%s() had to wait on a thread with no Waiter; create a fib::Waiter "
              "after the FiberManager",
              operation);
    return waiter->wait(fd, events);
}

// The loop shared by write_all and send_all: `put` makes one attempt.
template <class Put>
ssize_t put_all(int fd, const void* data, std::size_t size, Put put, const char* operation) {
    const auto* bytes = static_cast<const char*>(data);
    std::size_t done = 0;
    while (done < size) {
        const ssize_t n = put(fd, bytes + done, size - done);
        if (n >= 0) {
            done += static_cast<std::size_t>(n);  // a partial write: go on with the rest
        } else if (would_block()) {
            wait_for(fd, POLLOUT, operation);
        } else if (errno != EINTR) {
            return -1;
        }
    }
    return static_cast<ssize_t>(size);
}

}  // namespace

short wait(int fd, short events) { return wait_for(fd, events, "wait"); }

ssize_t read(int fd, void* buffer, std::size_t size) {
    for (;;) {
        const ssize_t n = ::read(fd, buffer, size);
        if (n >= 0 || (!would_block() && errno != EINTR)) return n;
        if (errno != EINTR) wait_for(fd, POLLIN, "read");
    }
}

ssize_t write_all(int fd, const void* data, std::size_t size) {
    return put_all(fd, data, size, ::write, "write_all");
}

ssize_t send_all(int socket, const void* data, std::size_t size) {
    auto send = [](int fd, const void* bytes, std::size_t count) {
        return ::send(fd, bytes, count, MSG_NOSIGNAL);
    };
    return put_all(socket, data, size, send, "send_all");
}

int close(int fd) {
    if (Waiter* waiter = Waiter::current()) waiter->forget(fd);
    return ::close(fd);
}

int accept(int listener, sockaddr* address, socklen_t* length) {
    for (;;) {
        const int fd = ::accept4(listener, address, length, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd >= 0) return fd;
        if (would_block())
            wait_for(listener, POLLIN, "accept");
        else if (errno != EINTR && errno != ECONNABORTED)
            return -1;
    }
}

int connect(int socket, const sockaddr* address, socklen_t length) {
    if (::connect(socket, address, length) == 0) return 0;
    if (errno != EINPROGRESS && errno != EINTR) return -1;
    // The handshake goes on in the kernel; the socket turns writable when it
    // ends, and SO_ERROR says how.
    wait_for(socket, POLLOUT, "connect");
    int error = 0;
    socklen_t error_length = sizeof error;
    if (::getsockopt(socket, SOL_SOCKET, SO_ERROR, &error, &error_length) < 0) return -1;
    if (error == 0) return 0;
    errno = error;
    return -1;
}

}  // namespace fib::io
