// waiter.cpp — lesson 4: the Waiter's fiber loop around its Poller, and wait().
#include "fib/waiter.hpp"

#include "fib/fatal.hpp"

namespace fib {
namespace {

constexpr short kReadEvents = POLLIN | POLLPRI | POLLRDHUP;
constexpr short kWriteEvents = POLLOUT;

}  // namespace

// The Waiter of this thread, for the I/O helpers (io.hpp) to find, is kept in
// the thread's FiberManager.
Waiter* Waiter::current() noexcept {
    FiberManager* manager = FiberManager::current();
    return manager ? manager->waiter() : nullptr;
}

Waiter& Waiter::of_this_thread(const char* what) {
    Waiter* waiter = current();
    if (!waiter)
        fatal("%s on a thread with no Waiter; create a fib::Waiter after the FiberManager", what);
    return *waiter;
}

Waiter::Waiter(const char* backend)
    : manager_(FiberManager::of_this_thread("a Waiter was created")), poller_(make_poller(backend)) {
    if (manager_.waiter()) fatal("a second Waiter was created on a thread that already has one");
    manager_.set_waiter(this);
}

// The Waiter's fiber is counted like any other, and ends once nobody waits:
// when wait_for_all() returns, it has ended too.
Waiter::~Waiter() {
    if (manager_.running()->id != 0)
        fatal("the Waiter was destroyed from %s; destroy it from main", label(*manager_.running()).text);
    manager_.wait_for_all();
    manager_.set_waiter(nullptr);
}

// The Waiter's fiber. Each turn: ask the Poller which fds are ready (without
// blocking if anyone else is ready to run), wake the fibers waiting on them,
// then yield so they run. With nothing left to wait for, it ends.
void Waiter::run() {
    self_ = manager_.running();
    while (has_work()) {
        const bool others_ready = manager_.ready_count() > 0;
        const int timeout = others_ready ? 0 : blocking_timeout();
        ++stats_.polls;
        if (timeout != 0) ++stats_.blocking_polls;
        ready_.clear();
        poller_->wait(timeout, ready_);
        wake_ready();
        manager_.yield();
    }
    self_ = nullptr;
    started_ = false;
}

// A wait was registered: make sure the Waiter's fiber is there to serve it.
void Waiter::start_if_stopped() {
    if (started_) return;
    started_ = true;
    ++stats_.fibers_started;
    Fiber({.name = "waiter"}, [this] { run(); }).detach();
}

// Something to wait for: a registered fd.
bool Waiter::has_work() const {
    return stats_.waiting > 0;
}

// With nothing else to run, block until an fd is ready, for as long as it takes.
int Waiter::blocking_timeout() {
    return -1;
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
    --stats_.waiting;
    ++stats_.wakeups;
    manager_.wake(waiting->fiber);
}

short Waiter::wait(int fd, short events) {
    Waiting waiting{fd, events, 0, manager_.running()};
    watch(waiting);
    manager_.park(WaitSite{events & kWriteEvents ? "Waiter::wait (write)" : "Waiter::wait (read)",
                           nullptr, nullptr});
    return waiting.revents;
}

void Waiter::watch(Waiting& waiting) {
    if (FiberManager::current() != &manager_)
        fatal("Waiter::wait() was called from a thread that is not its manager's");
    FiberRecord* self = waiting.fiber;
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
              label(*self).text, verb, fd, label(*taken->fiber).text, verb);
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

Waiter::FdWaiters& Waiter::waiters_of(int fd) {
    if (static_cast<std::size_t>(fd) >= by_fd_.size()) by_fd_.resize(fd + 1);
    return by_fd_[fd];
}

}  // namespace fib
