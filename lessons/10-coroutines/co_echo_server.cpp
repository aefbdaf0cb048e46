// co_echo_server.cpp — lesson 10: the echo server as tasks: an acceptor task and one task per client.
#include "co_echo_server.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

#include "fib/awaitables.hpp"
#include "fib/io.hpp"

CoEchoServer::CoEchoServer(const EchoOptions& options)
    : options_(options),
      listener_(fib::tcp::listen(options.bind, options.port)),
      port_(fib::tcp::local_port(listener_.get())),
      spare_fd_(::open("/dev/null", O_RDONLY | O_CLOEXEC)) {}

// The stop is a fiber's wait, and the end of every task at once: destroying
// a suspended task runs its frame's destructors, so each client's ClientSlot
// closes its socket, and each awaiter withdraws its registration.
void CoEchoServer::serve(int stop_fd) {
    fib::Executor executor;
    executor_ = &executor;
    executor.spawn(accept_clients(), "acceptor");
    fib::io::wait(stop_fd, POLLIN);
    executor.cancel_all();
    executor_stats_ = executor.stats();
    executor_ = nullptr;
    listener_.reset();
}

fib::Task<void> CoEchoServer::accept_clients() {
    for (;;) {
        sockaddr_storage peer{};
        socklen_t peer_length = sizeof peer;
        fib::UniqueFd socket(::accept4(listener_.get(), reinterpret_cast<sockaddr*>(&peer), &peer_length,
                                       SOCK_NONBLOCK | SOCK_CLOEXEC));
        if (!socket) {
            if (errno == EAGAIN || errno == EINTR) {
                co_await fib::co::readable(listener_.get());
                continue;
            }
            co_await back_off_after(errno);
            continue;
        }
        fib::tcp::set_no_delay(socket.get());
        served_.fetch_add(1, std::memory_order_relaxed);
        open_.fetch_add(1, std::memory_order_relaxed);
        executor_->spawn(serve_client(std::move(socket), fib::tcp::to_text(reinterpret_cast<sockaddr*>(&peer))),
                         "client");
    }
}

// Lesson 4's back-off (EchoServer::back_off_after says why), with a task's
// waits: for a client to leave, on a co::Event its ClientSlot sets; for a
// connection to refuse, on the listener.
fib::Task<void> CoEchoServer::back_off_after(int error) {
    std::fprintf(stderr, "co_echo_server: accept: %s\n", std::strerror(error));
    const bool out_of_resources =
        error == EMFILE || error == ENFILE || error == ENOBUFS || error == ENOMEM;
    if (!out_of_resources) co_return;
    if (open_connections() > 0 || !spare_fd_) {
        backing_off_ = true;
        co_await client_left_;
        backing_off_ = false;
        co_return;
    }
    co_await fib::co::readable(listener_.get());
    spare_fd_.reset();
    fib::UniqueFd dropped(::accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC));
    if (dropped) std::fprintf(stderr, "co_echo_server: out of fds: refused a connection\n");
    dropped.reset();
    spare_fd_.reset(::open("/dev/null", O_RDONLY | O_CLOEXEC));
}

CoEchoServer::ClientSlot::~ClientSlot() {
    socket.reset();  // closed before it stops being counted as open
    server.open_.fetch_sub(1, std::memory_order_relaxed);
    if (server.backing_off_) server.client_left_.set();
}

fib::Task<void> CoEchoServer::serve_client(fib::UniqueFd socket, fib::tcp::AddressText name) {
    const ClientSlot client{*this, std::move(socket)};
    if (!options_.quiet) std::fprintf(stderr, "co_echo_server: %s connected (%zu open)\n", name.text, open_connections());
    const EchoConnection::Ended ended = co_await echo(client.socket.get());
    if (!options_.quiet)
        std::fprintf(stderr, "co_echo_server: %s left after %llu bytes%s%s\n", name.text,
                     static_cast<unsigned long long>(ended.echoed), ended.error ? ": " : "",
                     ended.error ? std::strerror(ended.error) : "");
}

// EchoConnection::run (lesson 4) as a task, line for line. The shared buffer
// holds this client's bytes from the read to the copy of what the kernel did
// not take, and there is no co_await in between: a task, like a fiber, gives
// the thread up only where it says so, and here that is visible in the text.
fib::Task<EchoConnection::Ended> CoEchoServer::echo(int socket) {
    char* const buffer = read_buffer_.data();
    std::uint64_t echoed = 0;
    bool drained = false;
    for (;;) {
        if (drained) co_await fib::co::readable(socket);
        const ssize_t received = ::read(socket, buffer, SharedReadBuffer::kSize);
        if (received < 0 && (errno == EAGAIN || errno == EINTR)) {
            drained = true;
            continue;
        }
        if (received <= 0) co_return EchoConnection::Ended{echoed, received < 0 ? errno : 0};
        const auto length = static_cast<std::size_t>(received);
        drained = length < SharedReadBuffer::kSize;
        const ssize_t sent = ::send(socket, buffer, length, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (sent < 0 && errno != EAGAIN && errno != EINTR) co_return EchoConnection::Ended{echoed, errno};
        const std::size_t taken = sent < 0 ? 0 : static_cast<std::size_t>(sent);
        echoed += taken;
        bytes_.fetch_add(taken, std::memory_order_relaxed);
        if (taken == length) continue;
        const std::size_t rest_size = length - taken;
        const std::unique_ptr<char[]> rest = std::make_unique_for_overwrite<char[]>(rest_size);
        std::memcpy(rest.get(), buffer + taken, rest_size);
        if (!co_await send_rest(socket, rest.get(), rest_size)) co_return EchoConnection::Ended{echoed, errno};
        echoed += rest_size;
        bytes_.fetch_add(rest_size, std::memory_order_relaxed);
    }
}

// io::send_all (lesson 4) as a task: send, and wait for room while there is none.
fib::Task<bool> CoEchoServer::send_rest(int socket, const char* rest, std::size_t size) {
    while (size > 0) {
        const ssize_t sent = ::send(socket, rest, size, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (sent < 0 && (errno == EAGAIN || errno == EINTR)) {
            co_await fib::co::writable(socket);
            continue;
        }
        if (sent < 0) co_return false;
        rest += sent;
        size -= static_cast<std::size_t>(sent);
    }
    co_return true;
}
