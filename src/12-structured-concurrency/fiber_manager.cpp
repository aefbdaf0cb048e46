// fiber_manager.cpp — lesson 12: lesson 2's scheduling, with a stall detector per manager under FIB_STALL_MS.
//
// Replaces lesson 2's fiber_manager.cpp from stage 12 on, adding two lines:
// the constructor calls StallDetector::manager_created(), the destructor
// StallDetector::manager_ending() (stall_detector.hpp).
//
// Why a replacement. FIB_STALL_MS must reach every manager of the process,
// so something must run as each manager is made and destroyed, and there is
// no lesson-neutral hook there: a FiberEnvironment (lesson 7) is installed by
// hand and there is one per manager (FiberTls takes it); the trace and the
// registry (registry.cpp, whose enlist()/delist() run at just those moments)
// are the other candidates, but a stall detector is neither a trace nor the
// debugger's list, and a file named for one thing should not do another.
// This file constructs the manager.
#include "fib/fiber_manager.hpp"

#include <cstdio>

#include "fib/fatal.hpp"
#include "fib/sanitizer.hpp"
#include "fib/shuffle.hpp"
#include "fib/stall_detector.hpp"

namespace fib {

thread_local FiberManager* FiberManager::current_ = nullptr;

FiberManager* FiberManager::current() noexcept { return current_; }

FiberManager& FiberManager::of_this_thread(const char* what) {
    if (!current_) fatal("%s on a thread with no FiberManager; create one first", what);
    return *current_;
}

FiberManager::FiberManager() : thread_exceptions_(thread_exception_state()) {
    if (current_) fatal("a second FiberManager was created on a thread that already has one");
    main_.manager = this;
    main_.id = 0;
    main_.state = FiberState::Running;
    std::snprintf(main_.name, sizeof main_.name, "main");
    main_.tsan_fiber = sanitizer::tsan_current_fiber();  // the thread's own
    all_.push_back(&main_);
    shuffled_ = schedule_seed(&shuffle_state_);
    current_ = this;
    enlist();
    trace_ = Trace::for_new_manager(main_);
    StallDetector::manager_created(*this);
}

FiberManager::~FiberManager() {
    if (running_ != &main_)
        fatal("the FiberManager was destroyed from %s; destroy it from main", label(*running_).text);
    wait_for_all();
    if (all_.size() > 1)
        fatal("the FiberManager was destroyed while %s still has a joinable Fiber handle; join or "
              "detach it first",
              label(*all_.next(&main_)).text);
    StallDetector::manager_ending(*this);
    all_.remove(&main_);
    delist();
    current_ = nullptr;
    if (trace_) trace_->close();
}

void FiberManager::yield() {
    FiberRecord* next = take_next();
    if (!next) return;  // nobody else is ready: carry on
    running_->state = FiberState::Ready;
    ready_.push_back(running_);
    switch_to(next);
}

// A fiber parks only under the token of the wait it is in: a park with a
// stale one could be ended by a waker of that earlier wait.
void FiberManager::park(ParkToken token, WaitSite site) {
    if (token.fiber != running_ || token.wait != running_->waits)
        fatal("%s parked in %s with a token that is not its current wait's; take one with "
              "begin_wait() and park under it", label(*running_).text, site.what);
    if (running_->on_park) [[unlikely]] running_->on_park(*running_, site, running_->on_park_context);
    running_->state = FiberState::Blocked;
    running_->waiting_for = site;
    switch_to(next_or_deadlock());
}

// A stale token is a wake that came late: the fiber has begun another wait
// since, or was already woken (it is Ready, or running again). The wait's name
// stays in last_wait, so that what looks at a running fiber (gdb's info
// fibers) can say which wait it came back from.
bool FiberManager::wake(ParkToken token) {
    if (!parked(token)) return false;
    FiberRecord* fiber = token.fiber;
    fiber->state = FiberState::Ready;
    fiber->last_wait = fiber->waiting_for.what;
    fiber->waiting_for = WaitSite{};
    ready_.push_back(fiber);
    if (trace_) [[unlikely]] trace_->wake(*fiber, *running_);
    return true;
}

// Every fiber that runs next comes from here. Unless FIB_SCHEDULE_SEED is set
// that is the ready queue's front, at the cost of one branch that is always
// predicted right.
FiberRecord* FiberManager::take_next() {
    if (!shuffled_) [[likely]]
        return ready_.pop_front();
    return take_shuffled();
}

FiberRecord* FiberManager::next_or_deadlock() {
    FiberRecord* next = take_next();
    if (!next) report_deadlock();
    return next;
}

void FiberManager::wait_for_all() {
    if (running_ != &main_)
        fatal("wait_for_all() was called from %s; only main may wait for all fibers",
              label(*running_).text);
    if (finished_ == spawned_) return;
    main_waits_for_all_ = begin_wait();
    park(main_waits_for_all_, WaitSite{"wait_for_all", nullptr, nullptr});
}

ManagerStats FiberManager::stats() const {
    ManagerStats stats;
    stats.spawned = spawned_;
    stats.finished = finished_;
    stats.switches = switches_;
    stats.records = all_.size() - 1;
    stats.stacks_created = stacks_.created();
    stats.stacks_pooled = stacks_.pooled();
    stats.stacks_trimmed = stacks_.trimmed();
    return stats;
}

}  // namespace fib
