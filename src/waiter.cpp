// waiter.cpp — lesson 4: the Waiter's fiber loop around its Poller, and wait().
#include "fib/waiter.hpp"

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

Waiter::Waiter(const char* backend)
    : manager_(manager_of_this_thread()),
      poller_(make_poller(backend)),
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

// The Waiter's fiber. Each turn: ask the Poller which fds are ready (without
// blocking if anyone else is ready to run), wake the fibers waiting on them,
// then yield so they run.
void Waiter::run() {
    self_ = manager_.running();
    for (;;) {
        if (stats_.waiting == 0) {
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
        ready_.clear();
        poller_->wait(others_ready ? 0 : -1, ready_);
        wake_ready();
        manager_.yield();
    }
}

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
    poller_->watch(fd, waiters.events());
    ++stats_.waiting;
    if (idle_) {
        idle_ = false;
        manager_.wake(self_);
    }
    manager_.park(WaitSite{writes ? "Waiter::wait (write)" : "Waiter::wait (read)", nullptr, nullptr});
    return waiting.revents;
}

void Waiter::forget(int fd) {
    if (fd < 0) return;
    FdWaiters& waiters = waiters_of(fd);
    wake_if_ready(waiters, waiters.reader, POLLNVAL);
    wake_if_ready(waiters, waiters.writer, POLLNVAL);
    poller_->forget(fd);
}

Waiter::FdWaiters& Waiter::waiters_of(int fd) {
    if (static_cast<std::size_t>(fd) >= by_fd_.size()) by_fd_.resize(fd + 1);
    return by_fd_[fd];
}

WaiterStats Waiter::stats() const {
    WaiterStats stats = stats_;
    stats.interest_changes = poller_->interest_changes();
    return stats;
}

}  // namespace fib
