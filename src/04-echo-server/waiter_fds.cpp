// waiter_fds.cpp — lesson 4: who waits on which fd: wait(), watch(), and waking the fibers whose fd is ready.
#include "fib/waiter.hpp"

#include <cstdio>

#include "fib/fatal.hpp"

namespace fib {
namespace {

constexpr short kReadEvents = POLLIN | POLLPRI | POLLRDHUP;
constexpr short kWriteEvents = POLLOUT;

}  // namespace

// For each ready fd, in the order the Poller reports them: wake the reader
// and the writer its revents are for, then tell the Poller what is still
// wanted on it.
void Waiter::wake_ready() {
    for (const PollEvent& event : ready_) {
        FdWaiters& fd = by_fd_[event.fd];
        wake_if_ready(fd, fd.reader, event.revents);
        wake_if_ready(fd, fd.writer, event.revents);
        poller_->watch(event.fd, fd.events());
    }
}

// Errors and hang-ups concern both directions; POLLIN and POLLOUT only theirs.
// A fiber that waited both ways holds both slots and is woken once.
void Waiter::wake_if_ready(FdWaiters& fd, Waiting* waiting, short revents) {
    if (!waiting) return;
    const short mine = static_cast<short>(revents & (waiting->events | POLLERR | POLLHUP | POLLNVAL));
    if (!mine) return;
    waiting->revents = mine;
    if (fd.reader == waiting) fd.reader = nullptr;
    if (fd.writer == waiting) fd.writer = nullptr;
    --stats_.waiting;
    if (manager_.wake(waiting->token)) ++stats_.wakeups;
}

short Waiter::wait(int fd, short events) {
    Waiting waiting{fd, events, 0, manager_.begin_wait()};
    watch(waiting);
    manager_.park(waiting.token, WaitSite{events & kWriteEvents ? "Waiter::wait (write)" : "Waiter::wait (read)",
                                          nullptr, nullptr});
    return waiting.revents;
}

void Waiter::watch(Waiting& waiting) {
    if (FiberManager::current() != &manager_)
        fatal("Waiter::wait() was called from a thread that is not its manager's");
    FiberRecord* self = waiting.token.fiber;
    if (self == self_) fatal("the Waiter's own fiber called Waiter::wait()");
    const int fd = waiting.fd;
    const short events = waiting.events;
    if (fd < 0 || events == 0 || (events & ~(kReadEvents | kWriteEvents)) != 0)
        fatal("%s called Waiter::wait(fd %d, events 0x%x): need fd >= 0 and events from POLLIN, "
              "POLLPRI, POLLRDHUP, POLLOUT",
              label(*self).text, fd, static_cast<unsigned>(events));
    FdWaiters& waiters = waiters_of(fd);
    const bool reads = events & kReadEvents, writes = events & kWriteEvents;
    Waiting* taken = nullptr;
    if (reads && waiters.reader)
        taken = waiters.reader;
    else if (writes && waiters.writer)
        taken = waiters.writer;
    if (taken) {
        const char* verb = taken == waiters.reader ? "read" : "write";
        fatal("%s waits to %s fd %d, which %s already waits to %s; one fiber per direction per fd",
              label(*self).text, verb, fd, label(*taken->token.fiber).text, verb);
    }
    waiting.revents = 0;
    if (reads) waiters.reader = &waiting;
    if (writes) waiters.writer = &waiting;
    poller_->watch(fd, waiters.events());
    ++stats_.waiting;
    start_if_stopped();
}

void Waiter::forget(int fd) {
    if (fd < 0) return;
    FdWaiters& waiters = waiters_of(fd);
    wake_if_ready(waiters, waiters.reader, POLLNVAL);
    wake_if_ready(waiters, waiters.writer, POLLNVAL);
    poller_->forget(fd);
}

void Waiter::report_stuck_waits() {
    std::fprintf(stderr, "fib: the Waiter is being destroyed while these fibers wait on fds, and "
                         "only the kernel could wake them:\n");
    for (std::size_t fd = 0; fd < by_fd_.size(); ++fd) {
        const FdWaiters& waiters = by_fd_[fd];
        if (waiters.reader)
            std::fprintf(stderr, "  %s: waits to read fd %zu\n", label(*waiters.reader->token.fiber).text, fd);
        if (waiters.writer && waiters.writer != waiters.reader)
            std::fprintf(stderr, "  %s: waits to write fd %zu\n", label(*waiters.writer->token.fiber).text, fd);
    }
    fatal("the Waiter was destroyed with fibers still waiting on fds; to wait for them, call "
          "FiberManager::wait_for_all() first; to end them, close their fds or cancel them");
}

Waiter::FdWaiters& Waiter::waiters_of(int fd) {
    if (static_cast<std::size_t>(fd) >= by_fd_.size()) by_fd_.resize(fd + 1);
    return by_fd_[fd];
}

}  // namespace fib
