// wait_any.hpp — lesson 6: wait for the first of several fds, Events and a timeout, and learn which.
//
//   fib::Event mail;                                  // set by whoever has news for us
//   fib::Ready ready = fib::wait_any({{socket, POLLIN}, {mail.fd(), POLLIN}}, 30s);
//   if (ready.timed_out()) ...                        // 30 s of silence on both
//   else if (ready.index == 0) ...                    // the socket: ready.revents says how
//   else mail.try_wait(), ...                         // the Event: reset it, read the mail
//
// A fiber that can only wait for one thing at a time must choose: read its
// socket, or wait for news to send. Lwan's chat sample could not wait on both
// for years and polled instead, sleeping up to 8 s between looks. Here one
// fiber registers every source with the Waiter (and the deadline with the
// timer heap), parks once, and the first to fire wakes it; the rest are
// dropped before wait_any returns.
//
// An Event is a source through its eventfd, readable while it is signaled;
// wait_any does not reset it (try_wait() does, without suspending).
#pragma once

#include <poll.h>

#include <cstddef>
#include <initializer_list>
#include <span>

#include "fib/timer.hpp"

namespace fib {

struct Source {
    int fd;
    short events;  // as for Waiter::wait: POLLIN, POLLPRI, POLLRDHUP, POLLOUT
};

struct Ready {
    static constexpr int kTimedOut = -1;
    int index = kTimedOut;  // which source fired; the lowest index if several had
    short revents = 0;      // its poll revents (POLLERR, POLLHUP, POLLNVAL included)
    bool timed_out() const { return index == kTimedOut; }
};

// At most kMaxSources sources, each a different fd (the Waiter's rule of one
// fiber per direction per fd holds here too).
constexpr std::size_t kMaxSources = 16;

Ready wait_any(std::span<const Source> sources);
Ready wait_any(std::span<const Source> sources, Clock::duration timeout);
inline Ready wait_any(std::initializer_list<Source> sources) {
    return wait_any(std::span(sources.begin(), sources.size()));
}
inline Ready wait_any(std::initializer_list<Source> sources, Clock::duration timeout) {
    return wait_any(std::span(sources.begin(), sources.size()), timeout);
}

namespace io {
// io::wait with a timeout: Ready{0, revents}, or timed_out().
Ready wait(int fd, short events, Clock::duration timeout);
// io::read that gives up after `timeout` without a byte: -1 with errno ETIMEDOUT.
ssize_t read(int fd, void* buffer, std::size_t size, Clock::duration timeout);
}  // namespace io

}  // namespace fib
