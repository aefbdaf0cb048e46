// echo_server.cpp — lesson 4: the echo server: an acceptor fiber and one fiber per client.
#include "echo_server.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>

#include "fib/fiber.hpp"
#include "fib/io.hpp"
#include "fib/tcp.hpp"

EchoServer::EchoServer(const EchoOptions& options)
    : options_(options),
      listener_(fib::tcp::listen(options.bind, options.port)),
      port_(fib::tcp::local_port(listener_.get())),
      spare_fd_(::open("/dev/null", O_RDONLY | O_CLOEXEC)) {}

void EchoServer::serve(int stop_fd) {
    fib::Fiber acceptor({.name = "acceptor"}, [this] { accept_clients(); });
    fib::io::wait(stop_fd, POLLIN);
    // Stop accepting: shutdown() turns the listening socket's poll to POLLHUP,
    // which wakes the acceptor; its next accept() fails and it sees stopping_.
    stopping_ = true;
    ::shutdown(listener_.get(), SHUT_RDWR);
    client_left_.notify_all();  // in case the acceptor is backing off
    acceptor.join();
    // Close every client: each one's read() now returns 0, or its send() EPIPE,
    // so its fiber ends. A client fiber that has not started yet sees stopping_.
    for (Client* client = clients_.front(); client; client = clients_.next(client))
        ::shutdown(client->socket, SHUT_RDWR);
    while (open_connections() > 0) client_left_.wait();
    listener_.reset();
}

void EchoServer::accept_clients() {
    while (!stopping_) {
        sockaddr_storage peer{};
        socklen_t peer_length = sizeof peer;
        fib::UniqueFd socket(
            fib::io::accept(listener_.get(), reinterpret_cast<sockaddr*>(&peer), &peer_length));
        if (stopping_) return;
        if (!socket) {
            back_off_after(errno);
            continue;
        }
        // An echo larger than the buffer goes out in several writes: no Nagle.
        fib::tcp::set_no_delay(socket.get());
        const fib::tcp::AddressText name = fib::tcp::to_text(reinterpret_cast<sockaddr*>(&peer));
        try {
            fib::Fiber client({.name = name.text},
                              [this](fib::UniqueFd connection) { serve_client(std::move(connection)); },
                              std::move(socket));
            client.detach();
        } catch (const std::exception& error) {
            // No stack for a new fiber (see vm.max_map_count): drop this client.
            std::fprintf(stderr, "echo_server: no fiber for %s: %s\n", name.text, error.what());
            continue;
        }
        served_.fetch_add(1, std::memory_order_relaxed);
        open_.fetch_add(1, std::memory_order_relaxed);
    }
}

// accept() failed. Out of fds (EMFILE, ENFILE) or buffers (ENOBUFS, ENOMEM),
// trying again at once would spin: accept() fails that way before it even
// looks for a pending connection. So wait until one of our clients leaves and
// frees its fd (serve() also notifies client_left_ when it stops). With no
// client to wait for, wait for a connection to arrive (or the stop), then give
// up the spare fd for a moment to accept that connection and close it: the
// client is refused, and the server neither spins nor stops serving.
void EchoServer::back_off_after(int error) {
    std::fprintf(stderr, "echo_server: accept: %s\n", std::strerror(error));
    const bool out_of_resources =
        error == EMFILE || error == ENFILE || error == ENOBUFS || error == ENOMEM;
    if (!out_of_resources) return;  // about that one connection (EPROTO, EPERM, ...): go on
    if (open_connections() > 0 || !spare_fd_) {
        client_left_.wait();
        return;
    }
    fib::io::wait(listener_.get(), POLLIN);
    if (stopping_) return;
    spare_fd_.reset();
    fib::UniqueFd dropped(::accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC));
    if (dropped) std::fprintf(stderr, "echo_server: out of fds: refused a connection\n");
    dropped.reset();
    spare_fd_.reset(::open("/dev/null", O_RDONLY | O_CLOEXEC));
}

// One client's fiber. It is on the list serve() closes at the stop; a client
// accepted just before the stop may start after that, and must not begin.
void EchoServer::serve_client(fib::UniqueFd socket) {
    if (!stopping_) {
        Client client{socket.get(), {}};
        clients_.push_back(&client);
        echo_until_closed(socket.get());
        clients_.remove(&client);
    }
    socket.reset();  // closed before it stops being counted as open
    open_.fetch_sub(1, std::memory_order_relaxed);
    client_left_.notify_all();
}

// Read what the client sends and write it all back, until it closes, fails,
// or the server shuts the socket down.
void EchoServer::echo_until_closed(int socket) {
    if (!options_.quiet)
        std::fprintf(stderr, "echo_server: %s connected (%zu open)\n", fib::this_fiber::name(),
                     open_connections());
    // 8 KiB on the fiber's 64 KiB stack. Each 4 KiB of it is a resident page
    // per connection, even for an idle client: -fstack-clash-protection writes
    // to every page of a frame larger than a page as the frame is set up.
    // (make bench-lesson4's conn_rss row measures what an idle connection costs.)
    char buffer[8 * 1024];
    std::uint64_t echoed = 0;
    int error = 0;
    bool drained = false;
    for (;;) {
        const ssize_t received = receive(socket, buffer, sizeof buffer, drained);
        if (received <= 0) {
            error = received < 0 ? errno : 0;
            break;
        }
        if (fib::io::send_all(socket, buffer, static_cast<std::size_t>(received)) < 0) {
            error = errno;
            break;
        }
        drained = static_cast<std::size_t>(received) < sizeof buffer;
        echoed += static_cast<std::uint64_t>(received);
        bytes_.fetch_add(static_cast<std::uint64_t>(received), std::memory_order_relaxed);
    }
    if (!options_.quiet)
        std::fprintf(stderr, "echo_server: %s left after %llu bytes%s%s\n", fib::this_fiber::name(),
                     static_cast<unsigned long long>(echoed), error ? ": " : "",
                     error ? std::strerror(error) : "");
}

// A read that returned less than it asked for took all the socket had, so
// reading again at once would only fail with EAGAIN: wait for more first, and
// save that system call (one in three per message, before this).
ssize_t EchoServer::receive(int socket, void* buffer, std::size_t size, bool drained) {
    if (drained) fib::io::wait(socket, POLLIN);
    return fib::io::read(socket, buffer, size);
}
