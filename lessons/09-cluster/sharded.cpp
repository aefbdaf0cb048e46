// sharded.cpp — lesson 9: a listener per thread, serving until cancelled, and the stop signal.
#include "sharded.hpp"

#include <poll.h>
#include <sys/eventfd.h>

#include <cerrno>
#include <system_error>

#include "../06-time-and-events/stop_signals.hpp"
#include "fib/reuse_port.hpp"

std::vector<fib::UniqueFd> listen_on_every_thread(const char* bind, std::uint16_t port,
                                                  std::size_t threads) {
    std::vector<fib::UniqueFd> listeners;
    for (std::size_t i = 0; i < threads; ++i) {
        listeners.push_back(fib::tcp::listen_reuse_port(bind, port));
        port = fib::tcp::local_port(listeners.back().get());
    }
    return listeners;
}

// serve() stops when its stop fd turns readable or its fiber is cancelled;
// here only the cancel does: the fd is an eventfd nobody writes.
void serve_until_stopped(FiberServer& server) {
    const fib::UniqueFd never(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
    if (!never) throw std::system_error(errno, std::generic_category(), "eventfd for serve()");
    server.serve(never.get());
}

const char* wait_for_stop_signal(int stop_fd) {
    pollfd signal{stop_fd, POLLIN, 0};
    while (::poll(&signal, 1, -1) < 0 && errno == EINTR) {
    }
    return stop_signal_fd_name(stop_fd);
}
