// waiter.cpp — lesson 11: lesson 6's Waiter loop, which also runs while the Poller's operations are in flight.
//
// Replaces lesson 6's waiter.cpp from stage 11 on: has_work() counts the
// operations an io_uring Poller holds (a fiber parked for its CQE waits on the
// Waiter as much as one parked for readiness), and the last look before the
// stuck-fiber report also counts a completion that woke a fiber. Lesson 6's
// said:
//
// Replaces lesson 5's waiter.cpp (lesson 4's, which tells the Poller when the
// fiber stops) from stage 6 on: the loop expires timers, blocks no longer than
// the nearest deadline, and runs while a deadline is set.
#include "fib/waiter.hpp"

#include <cstdio>

#include "fib/fatal.hpp"

namespace fib {
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
// when wait_for_all() returns, it has ended too. While closing_ is set, the
// Waiter's loop refuses to sleep in the kernel for ever (see run()).
Waiter::~Waiter() {
    if (manager_.running()->id != 0)
        fatal("the Waiter was destroyed from %s; destroy it from main", label(*manager_.running()).text);
    closing_ = true;
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
        // Main is in ~Waiter, nothing else can run, and nothing but the kernel
        // could end the wait: it would be for ever. Only look, then; if no fd
        // is ready either, the program would hang, so stop it instead.
        const bool last_look = timeout < 0 && closing_;
        ++stats_.polls;
        if (timeout != 0 && !last_look) ++stats_.blocking_polls;
        ready_.clear();
        manager_.trace_begin("poll", "timeout_ms", last_look ? 0 : timeout);
        poller_->wait(last_look ? 0 : timeout, ready_);
        manager_.trace_end("ready", static_cast<std::int64_t>(ready_.size()));
        // A completion wakes its fiber from inside the Poller's wait: then
        // the ready queue is not empty, and the program goes on.
        if (last_look && ready_.empty() && manager_.ready_count() > 0) {
            manager_.yield();
            continue;
        }
        if (last_look && ready_.empty()) poller_->describe_waits(stderr);
        if (last_look && ready_.empty()) report_stuck_waits();
        wake_ready();
        timers_.expire();
        manager_.yield();
    }
    self_ = nullptr;
    started_ = false;
    poller_->stopped();
}

// A wait was registered: make sure the Waiter's fiber is there to serve it.
void Waiter::start_if_stopped() {
    if (started_) return;
    started_ = true;
    ++stats_.fibers_started;
    Fiber({.name = "waiter"}, [this] { run(); }).detach();
}

// Something to wait for: a registered fd, or a deadline.
bool Waiter::has_work() const {
    if (timers_.pending()) return true;
    if (poller_->in_flight() > 0) return true;
    return stats_.waiting > 0;
}

// With nothing else to run, block until an fd is ready, but no longer than
// until the nearest deadline.
int Waiter::blocking_timeout() {
    if (timers_.pending()) return timers_.timeout_ms();
    return -1;
}

}  // namespace fib
