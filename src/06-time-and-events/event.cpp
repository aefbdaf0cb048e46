// event.cpp — lesson 6: Event on an eventfd: write to set, read to reset, the Waiter in between.
#include "fib/event.hpp"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <system_error>

#include "fib/fatal.hpp"
#include "fib/io.hpp"

namespace fib {

Event::Event() : eventfd_(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {
    if (!eventfd_) throw std::system_error(errno, std::generic_category(), "eventfd for an Event");
}

// write(2) is async-signal-safe, so set() may run in a signal handler. A
// handler must leave errno as it found it (the code it interrupted may be
// about to read errno), and a failed write sets it: say, EAGAIN when the
// counter is full (set 2^64 - 2 times without a wait). Then the Event is
// signaled anyway, which is all a set promises.
void Event::set() {
    const int saved_errno = errno;
    const std::uint64_t one = 1;
    while (::write(eventfd_.get(), &one, sizeof one) < 0 && errno == EINTR) {
    }
    errno = saved_errno;
}

// Reading an eventfd returns its counter and sets it to 0: signaled -> not.
bool Event::try_wait() {
    std::uint64_t count = 0;
    for (;;) {
        if (::read(eventfd_.get(), &count, sizeof count) == sizeof count) return true;
        if (errno == EAGAIN) return false;
        if (errno != EINTR) fatal("reading an Event's eventfd failed: %d", errno);
    }
}

void Event::wait() {
    while (!try_wait()) io::wait(eventfd_.get(), POLLIN);
}

}  // namespace fib
