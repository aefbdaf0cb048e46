// timed_echo_server.cpp — lesson 6: the echo loop's two waits, each with its deadline.
#include "timed_echo_server.hpp"

#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "fib/fiber.hpp"
#include "fib/io.hpp"
#include "fib/timer.hpp"
#include "fib/wait_any.hpp"

// Which deadline ended the connection, if one did, for the server's counts.
class TimedEchoServer::Connection : public EchoConnection {
public:
    Connection(int socket, TimedEchoServer& server)
        : EchoConnection(socket, server.read_buffer_, server.bytes_), options_(server.options_) {}

    bool stalled() const { return stalled_; }

protected:
    // Parks only before its read, as EchoConnection asks: it waits for the
    // socket, with the idle deadline, and reads with read(2) once it is
    // readable; a readable socket that has nothing after all (EAGAIN) is
    // waited for again, under the same deadline.
    ssize_t receive(void* buffer, std::size_t size, bool drained) override {
        if (options_.idle_timeout == fib::Clock::duration::max())
            return EchoConnection::receive(buffer, size, drained);
        const fib::Clock::time_point deadline = fib::deadline_after(options_.idle_timeout);
        for (;;) {
            if (drained) {
                const fib::Ready ready = fib::io::wait(socket(), POLLIN, deadline - fib::Clock::now());
                if (ready.timed_out() || ready.cancelled()) {
                    errno = ready.timed_out() ? ETIMEDOUT : ECANCELED;
                    return -1;
                }
                if (ready.revents & POLLNVAL) {
                    errno = EBADF;
                    return -1;
                }
            }
            const ssize_t n = ::read(socket(), buffer, size);
            if (n >= 0 || (errno != EAGAIN && errno != EINTR)) return n;
            drained = true;
        }
    }

    ssize_t send_rest(const void* rest, std::size_t size) override {
        const ssize_t sent = fib::io::send_all(socket(), rest, size, options_.write_timeout);
        stalled_ = sent < 0 && errno == ETIMEDOUT;
        return sent;
    }

private:
    const TimedEchoOptions& options_;
    bool stalled_ = false;
};

TimedEchoServer::TimedEchoServer(const TimedEchoOptions& options)
    : FiberServer("echo_server", options.bind, options.port), options_(options) {}

void TimedEchoServer::serve_client(int socket) {
    if (!options_.quiet)
        std::fprintf(stderr, "echo_server: %s connected (%zu open)\n", fib::this_fiber::name(),
                     clients_connected());
    Connection connection(socket, *this);
    const EchoConnection::Ended ended = connection.run();
    if (ended.error == ETIMEDOUT && connection.stalled()) {
        slow_closed_.fetch_add(1, std::memory_order_relaxed);
        reset_on_close(socket);
    } else if (ended.error == ETIMEDOUT) {
        idle_closed_.fetch_add(1, std::memory_order_relaxed);
    }
    if (!options_.quiet)
        std::fprintf(stderr, "echo_server: %s left after %llu bytes%s%s\n", fib::this_fiber::name(),
                     static_cast<unsigned long long>(ended.echoed), ended.error ? ": " : "",
                     ended.error ? std::strerror(ended.error) : "");
}
