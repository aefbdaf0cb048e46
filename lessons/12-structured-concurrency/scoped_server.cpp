// scoped_server.cpp — lesson 12: the acceptor and the clients as children of one scope; stop = cancel it.
#include "scoped_server.hpp"

#include <poll.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <exception>
#include <utility>

#include "fib/io.hpp"
#include "fib/tcp.hpp"
#include "fib/timer.hpp"

ScopedServer::ScopedServer(const char* program, const char* bind, std::uint16_t port)
    : ScopedServer(program, fib::tcp::listen(bind, port)) {}

ScopedServer::ScopedServer(const char* program, fib::UniqueFd listener)
    : program_(program), listener_(std::move(listener)), port_(fib::tcp::local_port(listener_.get())) {}

// The whole life of the server is one scope: it returns when the acceptor and
// the last client have ended, which the cancel below makes soon.
void ScopedServer::serve(int stop_fd) {
    fib::scope({.name = "server"}, [&](fib::Scope& connections) {
        connections.spawn({.name = "acceptor"}, [&] { accept_clients(connections); });
        fib::io::wait(stop_fd, POLLIN);  // returns at once if the body is cancelled
        connections.cancel();
    });
    listener_.reset();
}

// A client spawned after the stop starts cancelled: its first wait ends at
// once, so no `stopping_` flag is needed. Out of fds or memory, accept() fails
// before it looks for a connection: waiting a little keeps the loop from
// spinning (FiberServer also refuses the connection; see its back_off_after).
void ScopedServer::accept_clients(fib::Scope& connections) {
    while (!fib::this_fiber::cancelled()) {
        sockaddr_storage peer{};
        socklen_t peer_length = sizeof peer;
        fib::UniqueFd socket(fib::io::accept(listener_.get(), reinterpret_cast<sockaddr*>(&peer), &peer_length));
        if (!socket) {
            if (errno == ECANCELED) continue;
            std::fprintf(stderr, "%s: accept: %s\n", program_, std::strerror(errno));
            if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM)
                fib::sleep_for(std::chrono::milliseconds(100));
            continue;
        }
        fib::tcp::set_no_delay(socket.get());
        const fib::tcp::AddressText name = fib::tcp::to_text(reinterpret_cast<sockaddr*>(&peer));
        try {
            connections.spawn({.name = name.text}, [this](fib::UniqueFd connection) { run_client(std::move(connection)); },
                              std::move(socket));
        } catch (const std::exception& error) {
            std::fprintf(stderr, "%s: no fiber for %s: %s\n", program_, name.text, error.what());
            continue;
        }
        served_.fetch_add(1, std::memory_order_relaxed);
    }
}

// One client's failure is that client's: logged here, so that it never
// reaches the scope (whose first exception would stop the server).
void ScopedServer::run_client(fib::UniqueFd socket) {
    open_.fetch_add(1, std::memory_order_relaxed);
    try {
        serve_client(socket.get());
    } catch (const std::exception& error) {
        std::fprintf(stderr, "%s: %s: %s\n", program_, fib::this_fiber::name(), error.what());
    }
    socket.reset();
    open_.fetch_sub(1, std::memory_order_relaxed);
}
