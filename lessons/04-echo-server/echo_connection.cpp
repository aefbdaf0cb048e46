// echo_connection.cpp — lesson 4: the echo loop: one read, one send, and a copy only of what the kernel left.
#include "echo_connection.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "fib/io.hpp"

// Per message, when the client reads its echoes as fast as it sends: one
// read() into the shared buffer and one send() from it, and nothing else (the
// fiber's wait for the next message shares the Waiter's call into the kernel
// with every other fiber waiting then).
//
// The shared buffer belongs to this fiber from the read that fills it until
// what the kernel did not take has been copied out of it, and the fiber does
// not park in between: the send is non-blocking (MSG_DONTWAIT), and receive()
// parks only before it reads. A park in between would let another client's fiber
// read into the buffer and overwrite bytes this client has not got yet; its
// echo would carry the other client's bytes. tests/L04_echo_buffer_test.cpp
// checks that every client gets its own bytes back while a slow reader keeps
// its fiber parked with a rest to send.
EchoConnection::Ended EchoConnection::run() {
    char* const buffer = buffer_.data();
    bool drained = false;
    for (;;) {
        const ssize_t received = receive(buffer, SharedReadBuffer::kSize, drained);
        if (received <= 0) return {echoed_, received < 0 ? errno : 0};
        const auto length = static_cast<std::size_t>(received);
        // A read that returned less than it asked for took all the socket had:
        // reading again at once would only fail with EAGAIN. So the next
        // receive() waits for more first, and saves that system call.
        drained = length < SharedReadBuffer::kSize;
        const ssize_t sent = ::send(socket_, buffer, length, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (sent < 0 && errno != EAGAIN && errno != EINTR) return {echoed_, errno};
        const std::size_t taken = sent < 0 ? 0 : static_cast<std::size_t>(sent);
        count_echoed(taken);
        if (taken == length) continue;
        // The kernel took only part of it (the client reads more slowly than it
        // sends): copy the rest into memory of this connection's own, held only
        // until the rest is out, so that an idle connection holds none.
        const std::size_t rest_size = length - taken;
        const std::unique_ptr<char[]> rest = std::make_unique_for_overwrite<char[]>(rest_size);
        std::memcpy(rest.get(), buffer + taken, rest_size);
        if (send_rest(rest.get(), rest_size) < 0) return {echoed_, errno};
        count_echoed(rest_size);
    }
}

// The shared buffer may be written only while this fiber runs, so the loop
// waits for the socket itself and then reads with read(2). io::read promises
// only that its read is done when it returns, not when the buffer is
// written: a Waiter may hand the read to the kernel for the whole wait.
ssize_t EchoConnection::receive(void* buffer, std::size_t size, bool drained) {
    for (;;) {
        if (drained) {
            const short revents = fib::io::wait(socket_, POLLIN);
            if (revents == 0 || (revents & POLLNVAL)) {  // cancelled, or closed behind the wait
                errno = revents == 0 ? ECANCELED : EBADF;
                return -1;
            }
        }
        const ssize_t n = ::read(socket_, buffer, size);
        if (n >= 0 || (errno != EAGAIN && errno != EINTR)) return n;
        drained = true;
    }
}

ssize_t EchoConnection::send_rest(const void* rest, std::size_t size) {
    return fib::io::send_all(socket_, rest, size);
}

void EchoConnection::count_echoed(std::size_t bytes) {
    echoed_ += bytes;
    bytes_echoed_.fetch_add(bytes, std::memory_order_relaxed);
}
