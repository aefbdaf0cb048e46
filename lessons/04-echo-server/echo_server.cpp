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
        // A rest the kernel did not take at once goes out in a send() of its
        // own: no Nagle, which would hold it back until the client's ACK.
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
        if (!options_.quiet)
            std::fprintf(stderr, "echo_server: %s connected (%zu open)\n", fib::this_fiber::name(),
                         open_connections());
        const EchoConnection::Ended ended = echo(socket.get());
        if (!options_.quiet)
            std::fprintf(stderr, "echo_server: %s left after %llu bytes%s%s\n",
                         fib::this_fiber::name(), static_cast<unsigned long long>(ended.echoed),
                         ended.error ? ": " : "", ended.error ? std::strerror(ended.error) : "");
        clients_.remove(&client);
    }
    socket.reset();  // closed before it stops being counted as open
    open_.fetch_sub(1, std::memory_order_relaxed);
    client_left_.notify_all();
}

EchoConnection::Ended EchoServer::echo(int socket) {
    EchoConnection connection(socket, read_buffer_, bytes_);
    return connection.run();
}
