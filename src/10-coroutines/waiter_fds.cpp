// waiter_fds.cpp — lesson 10: lesson 6's fd waits, where a registration with on_ready is called back, not woken.
//
// Replaces lesson 6's waiter_fds.cpp from stage 10 on: wake_if_ready calls a
// registration's on_ready (waiter.hpp) where it would wake a fiber. The rest
// is lesson 6's, which said:
//
//
// Replaces lesson 4's waiter_fds.cpp from stage 6 on: a fiber may now have
// other wakers (another of its fds, its timer), and the first wins: the
// token's wake (lesson 2) does nothing once the wait is over; unwatch() drops
// a registration that did not fire; and a cancel ends a wait (cancel.hpp),
// with revents 0.
#include "fib/waiter.hpp"

#include <cstdio>

#include "fib/cancel.hpp"
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
// A fiber that waited both ways holds both slots and is woken once. A fiber
// that something else has already woken (another of its fds, or its deadline)
// is not parked under its token any more: it only learns the revents.
void Waiter::wake_if_ready(FdWaiters& fd, Waiting* waiting, short revents) {
    if (!waiting) return;
    const short mine = static_cast<short>(revents & (waiting->events | POLLERR | POLLHUP | POLLNVAL));
    if (!mine) return;
    waiting->revents = mine;
    if (fd.reader == waiting) fd.reader = nullptr;
    if (fd.writer == waiting) fd.writer = nullptr;
    --stats_.waiting;
    // A coroutine's registration (awaitables.hpp) wakes no fiber: its on_ready
    // queues the coroutine on its Executor. The registration is gone by now,
    // so on_ready may register again.
    if (waiting->on_ready) {
        ++stats_.wakeups;
        waiting->on_ready(*waiting);
        return;
    }
    if (manager_.wake(waiting->token)) ++stats_.wakeups;
}

// A cancel ends the wait too (cancel.hpp), before its fd is ready: then
// revents stays 0. A fiber already cancelled does not wait at all.
short Waiter::wait(int fd, short events) {
    if (this_fiber::cancelled()) return 0;
    Waiting waiting{fd, events, 0, manager_.begin_wait()};
    watch(waiting);
    {
        const CancelScope cancellable(waiting.token);
        manager_.park(waiting.token, WaitSite{events & kWriteEvents ? "Waiter::wait (write)" : "Waiter::wait (read)",
                                              nullptr, nullptr});
    }
    unwatch(waiting);
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

// A registration that fired is already gone; one that did not leaves its
// slots, and the Poller is told what is still wanted on the fd.
void Waiter::unwatch(Waiting& waiting) {
    FdWaiters& waiters = waiters_of(waiting.fd);
    if (waiters.reader != &waiting && waiters.writer != &waiting) return;
    if (waiters.reader == &waiting) waiters.reader = nullptr;
    if (waiters.writer == &waiting) waiters.writer = nullptr;
    poller_->watch(waiting.fd, waiters.events());
    --stats_.waiting;
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
