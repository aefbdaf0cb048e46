// fiber_server.cpp — lesson 6: the acceptor fiber, the client fibers, and a stop that cancels them.
#include "fiber_server.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <exception>
#include <utility>

#include "fib/cancel.hpp"
#include "fib/fiber.hpp"
#include "fib/io.hpp"
#include "fib/tcp.hpp"
#include "fib/timer.hpp"

FiberServer::FiberServer(const char* program, const char* bind, std::uint16_t port)
    : FiberServer(program, fib::tcp::listen(bind, port)) {}

FiberServer::FiberServer(const char* program, fib::UniqueFd listener)
    : program_(program),
      listener_(std::move(listener)),
      port_(fib::tcp::local_port(listener_.get())),
      spare_fd_(::open("/dev/null", O_RDONLY | O_CLOEXEC)) {}

// The stop: stopping_ first, so that a client fiber accepted but not started
// yet does not begin; then a cancel for the acceptor and for each client. The
// wait for the clients to leave is shielded: serve() may be stopping because
// its own fiber was cancelled, and its clients use the server, so it must not
// return before the last has gone (each was cancelled, so each goes soon).
void FiberServer::serve(int stop_fd) {
    fib::Fiber acceptor({.name = "acceptor"}, [this] { accept_clients(); });
    fib::io::wait(stop_fd, POLLIN);  // returns 0 at once if this fiber is cancelled
    stopping_ = true;
    acceptor.cancel();
    acceptor.join();
    fib::FiberManager& manager = fib::FiberManager::of_this_thread("FiberServer::serve() stopped");
    for (Client* client = clients_.front(); client; client = clients_.next(client))
        manager.cancel(client->fiber);
    const fib::CancelShield until_they_have_gone;
    while (clients_connected() > 0) client_left_.wait();
    listener_.reset();
}

void FiberServer::accept_clients() {
    while (!fib::this_fiber::cancelled()) {
        sockaddr_storage peer{};
        socklen_t peer_length = sizeof peer;
        fib::UniqueFd socket(accept_client(reinterpret_cast<sockaddr*>(&peer), &peer_length));
        if (!socket) {
            if (errno != ECANCELED) back_off_after(errno);
            continue;
        }
        // A reply larger than a segment goes out in several sends: no Nagle.
        fib::tcp::set_no_delay(socket.get());
        const fib::tcp::AddressText name = fib::tcp::to_text(reinterpret_cast<sockaddr*>(&peer));
        try {
            fib::Fiber client(
                {.name = name.text},
                [this](fib::UniqueFd connection) { run_client(std::move(connection)); },
                std::move(socket));
            client.detach();
        } catch (const std::exception& error) {
            // No stack for a new fiber (see vm.max_map_count): drop this client.
            std::fprintf(stderr, "%s: no fiber for %s: %s\n", program_, name.text, error.what());
            continue;
        }
        served_.fetch_add(1, std::memory_order_relaxed);
        open_.fetch_add(1, std::memory_order_relaxed);
    }
}

int FiberServer::accept_client(sockaddr* peer, socklen_t* peer_length) {
    return fib::io::accept(listener_.get(), peer, peer_length);
}

// accept() failed. Out of fds (EMFILE, ENFILE) or buffers (ENOBUFS, ENOMEM),
// trying again at once would spin: accept() fails that way before it even
// looks for a pending connection. With clients of ours connected, wait until
// one leaves and frees its fd (at most 100 ms: ENFILE and ENOMEM may end when
// another process lets go). With none, wait for a connection to arrive, then
// give up the spare fd for a moment to accept that connection and close it:
// the client is refused, and the server neither spins nor stops serving. The
// stop's cancel ends either wait.
void FiberServer::back_off_after(int error) {
    std::fprintf(stderr, "%s: accept: %s\n", program_, std::strerror(error));
    const bool out_of_resources =
        error == EMFILE || error == ENFILE || error == ENOBUFS || error == ENOMEM;
    if (!out_of_resources) return;  // about that one connection (EPROTO, EPERM, ...): go on
    if (clients_connected() > 0 || !spare_fd_) {
        fib::wait_for(client_left_, std::chrono::milliseconds(100));
        return;
    }
    if (fib::io::wait(listener_.get(), POLLIN) == 0) return;
    spare_fd_.reset();
    fib::UniqueFd dropped(::accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC));
    if (dropped) std::fprintf(stderr, "%s: out of fds: refused a connection\n", program_);
    dropped.reset();
    spare_fd_.reset(::open("/dev/null", O_RDONLY | O_CLOEXEC));
}

// One client's fiber: on the list the stop cancels, while it serves. An
// exception from serving one client (out of memory, say) ends that client
// only, with a line in the log.
void FiberServer::run_client(fib::UniqueFd socket) {
    if (!stopping_) {
        Client client{fib::FiberManager::of_this_thread("a client fiber started").running(), {}};
        clients_.push_back(&client);
        try {
            serve_client(socket.get());
        } catch (const std::exception& error) {
            std::fprintf(stderr, "%s: %s: %s\n", program_, fib::this_fiber::name(), error.what());
        }
        clients_.remove(&client);
    }
    socket.reset();  // closed before it stops being counted as open
    open_.fetch_sub(1, std::memory_order_relaxed);
    client_left_.notify_all();
}

void FiberServer::reset_on_close(int socket) {
    const linger reset{1, 0};  // on, with 0 s: close() resets at once
    ::setsockopt(socket, SOL_SOCKET, SO_LINGER, &reset, sizeof reset);
}
