// waiter.cpp — lesson 4: the Waiter's fiber loop around poll(2), and wait().
#include "fib/waiter.hpp"

#include <cerrno>
#include <cstring>

#include "fib/fatal.hpp"

namespace fib {
namespace {

// The Waiter of this thread, for the I/O helpers (io.hpp) to find.
thread_local Waiter* current_waiter = nullptr;

constexpr short kReadEvents = POLLIN | POLLPRI | POLLRDHUP;
constexpr short kWriteEvents = POLLOUT;

FiberManager& manager_of_this_thread() {
    FiberManager* manager = FiberManager::current();
    if (!manager) fatal("a Waiter was created on a thread with no FiberManager; create one first");
    return *manager;
}

}  // namespace

Waiter* Waiter::current() noexcept { return current_waiter; }

Waiter::Waiter()
    : manager_(manager_of_this_thread()),
      fiber_({.name = "waiter", .service = true}, [this] { run(); }) {
    if (current_waiter) fatal("a second Waiter was created on a thread that already has one");
    current_waiter = this;
}

Waiter::~Waiter() {
    if (manager_.running()->id != 0)
        fatal("the Waiter was destroyed from %s; destroy it from main", label(*manager_.running()).text);
    manager_.wait_for_all();
    stopping_ = true;
    if (idle_) {
        idle_ = false;
        manager_.wake(self_);
    }
    fiber_.join();
    current_waiter = nullptr;
}

// The Waiter's fiber. Each turn: poll every registered fd (without blocking if
// anyone else is ready to run), wake the fibers whose fd is ready, then yield
// so they run.
void Waiter::run() {
    self_ = manager_.running();
    for (;;) {
        if (pollfds_.empty()) {
            if (stopping_) return;
            // Nothing to poll: sleep until wait() registers an fd. If no other
            // fiber can run either, park() reports the deadlock.
            idle_ = true;
            manager_.park(WaitSite{"Waiter: no fd to poll", nullptr, this});
            continue;
        }
        const bool others_ready = manager_.ready_count() > 0;
        ++stats_.polls;
        if (!others_ready) ++stats_.blocking_polls;
        const int ready = ::poll(pollfds_.data(), pollfds_.size(), others_ready ? 0 : -1);
        if (ready < 0 && errno != EINTR)
            fatal("the Waiter's poll() on %zu fds failed: %s", pollfds_.size(), std::strerror(errno));
        if (ready > 0) wake_ready();
        manager_.yield();
    }
}

// One pass over the polled fds, in the order they were registered: wake the
// reader and the writer each fd's revents are for, then keep the fd's pollfd
// (with the events still wanted) or drop it, packing the array as we go.
void Waiter::wake_ready() {
    std::size_t kept = 0;
    for (pollfd request : pollfds_) {
        FdWaiters& fd = by_fd_[request.fd];
        if (request.revents) {
            wake_if_ready(fd, fd.reader, request.revents);
            wake_if_ready(fd, fd.writer, request.revents);
            request.events = static_cast<short>((fd.reader ? fd.reader->events : 0) |
                                                (fd.writer ? fd.writer->events : 0));
            request.revents = 0;
        }
        if (request.events == 0) {
            fd.slot = -1;
            continue;
        }
        fd.slot = static_cast<int>(kept);
        pollfds_[kept++] = request;
    }
    pollfds_.resize(kept);
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
    ++stats_.wakeups;
    --stats_.waiting;
    manager_.wake(waiting->fiber);
}

short Waiter::wait(int fd, short events) {
    if (FiberManager::current() != &manager_)
        fatal("Waiter::wait() was called from a thread that is not its manager's");
    FiberRecord* self = manager_.running();
    if (self == self_) fatal("the Waiter's own fiber called Waiter::wait()");
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
              label(*self).text, verb, fd, label(*taken->fiber).text, verb);
    }
    Waiting waiting{events, 0, self};
    if (reads) waiters.reader = &waiting;
    if (writes) waiters.writer = &waiting;
    if (waiters.slot < 0) {
        waiters.slot = static_cast<int>(pollfds_.size());
        pollfds_.push_back(pollfd{fd, 0, 0});
    }
    pollfds_[waiters.slot].events |= events;
    ++stats_.waiting;
    if (idle_) {
        idle_ = false;
        manager_.wake(self_);
    }
    manager_.park(WaitSite{writes ? "Waiter::wait (write)" : "Waiter::wait (read)", nullptr, nullptr});
    return waiting.revents;
}

Waiter::FdWaiters& Waiter::waiters_of(int fd) {
    if (static_cast<std::size_t>(fd) >= by_fd_.size()) by_fd_.resize(fd + 1);
    return by_fd_[fd];
}

WaiterStats Waiter::stats() const { return stats_; }

}  // namespace fib
