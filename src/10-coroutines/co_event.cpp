// co_event.cpp — lesson 10: co::Event's eventfd: set() writes 1, a co_await reads (and so zeroes) it.
#include "fib/co_event.hpp"

#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <system_error>

#include "fib/fatal.hpp"

namespace fib::co {

Event::Event() : eventfd_(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {
    if (!eventfd_) throw std::system_error(errno, std::generic_category(), "eventfd");
}

Event::~Event() {
    if (awaited_) fatal("a co::Event was destroyed while a task waits on it");
}

// The counter only saturates at 2^64 - 2, which a set() per nanosecond
// would take five centuries to reach; the write cannot fail otherwise.
void Event::set() noexcept {
    const int saved_errno = errno;
    const std::uint64_t one = 1;
    [[maybe_unused]] const ssize_t written = ::write(eventfd_.get(), &one, sizeof one);
    errno = saved_errno;
}

bool Event::try_reset() noexcept {
    std::uint64_t count = 0;
    return ::read(eventfd_.get(), &count, sizeof count) == static_cast<ssize_t>(sizeof count);
}

void Event::check_one_waiter() {
    if (awaited_) fatal("a second task awaits a co::Event; one task at a time may wait on it");
    awaited_ = true;
}

}  // namespace fib::co
