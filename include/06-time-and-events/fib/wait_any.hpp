// wait_any.hpp — lesson 6: wait for the first of several fds, Events and a timeout, and learn
// which.
//
//   fib::Event mail;                                  // set by whoever has news for us
//   fib::Ready ready = fib::wait_any({{socket, POLLIN}, mail}, 30s);
//   if (ready.timed_out()) ...                        // 30 s of silence on both
//   else if (ready.cancelled()) ...                   // the fiber was cancelled (cancel.hpp)
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
// An Event is a source of its own (event.hpp): set on the fiber's thread, it
// wakes the fiber directly, and an Event already set ends the wait before it
// begins, without a system call; set from elsewhere, it wakes the fiber
// through its eventfd. wait_any does not reset it (try_wait() does, without
// suspending).
#pragma once

#include <poll.h>

#include <cstddef>
#include <initializer_list>
#include <span>

#include "fib/event.hpp"
#include "fib/timer.hpp"

namespace fib {

struct Source {
    Source(int fd, short events) : fd(fd), events(events) {}
    Source(Event& event) : fd(event.fd()), events(POLLIN), event(&event) {}  // NOLINT: implicit
    int fd;
    short events;            // as for Waiter::wait: POLLIN, POLLPRI, POLLRDHUP, POLLOUT
    Event* event = nullptr;  // an Event's source: readable while it is signaled
};

// Which source fired, or why none did. A source that fired wins over a
// cancel, and a cancel over the deadline.
struct Ready {
    static constexpr int kTimedOut = -1;
    static constexpr int kCancelled = -2;
    int index = kTimedOut;  // which source fired; the lowest index if several had
    short revents = 0;      // its poll revents (POLLERR, POLLHUP, POLLNVAL included)
    bool timed_out() const { return index == kTimedOut; }
    bool cancelled() const { return index == kCancelled; }
};

// At most kMaxSources sources, each a different fd (the Waiter's rule of one
// fiber per direction per fd holds here too). A timeout of zero or less (down
// to Clock::duration::min()) only looks: a source ready now wins, else
// timed_out() after one turn of the Waiter, which does not block.
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
// io::wait with a timeout: Ready{0, revents}, timed_out() or cancelled().
Ready wait(int fd, short events, Clock::duration timeout);
// io::read that gives up after `timeout` without a byte: -1 with errno
// ETIMEDOUT (or ECANCELED, as every io helper when its fiber is cancelled).
ssize_t read(int fd, void* buffer, std::size_t size, Clock::duration timeout);
// io::send_all that gives up when all `size` bytes are not sent within
// `timeout`: -1 with errno ETIMEDOUT (some bytes may have been sent). A write
// deadline: a peer that stops reading cannot hold the fiber for longer.
ssize_t send_all(int socket, const void* data, std::size_t size, Clock::duration timeout);
}  // namespace io

}  // namespace fib
