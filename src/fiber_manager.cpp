// fiber_manager.cpp — lesson 2: switching between fibers: yield, park, wake, and a fiber's end.
#include "fib/fiber_manager.hpp"

#include <cstdio>

#include "fib/fatal.hpp"
#include "fib/sanitizer.hpp"

namespace fib {
namespace {

// The manager of this thread. Only the pointer is per thread; everything a
// fiber needs lives in the manager and the fiber records. (Lesson 6 gives a
// fiber TLS of its own, where this pointer starts as nullptr: fiber_main sets
// it again as each fiber starts.)
thread_local FiberManager* current_manager = nullptr;

}  // namespace

FiberManager* FiberManager::current() noexcept { return current_manager; }

FiberManager::FiberManager() : thread_exceptions_(thread_exception_state()) {
    if (current_manager) fatal("a second FiberManager was created on a thread that already has one");
    main_.manager = this;
    main_.id = 0;
    main_.state = FiberState::Running;
    std::snprintf(main_.name, sizeof main_.name, "main");
    all_.push_back(&main_);
    current_manager = this;
}

FiberManager::~FiberManager() {
    if (running_ != &main_)
        fatal("the FiberManager was destroyed from %s; destroy it from main", label(*running_).text);
    wait_for_all();
    if (all_.size() > 1)
        fatal("the FiberManager was destroyed while %s still has a joinable Fiber handle; join or "
              "detach it first",
              label(*all_.next(&main_)).text);
    all_.remove(&main_);
    current_manager = nullptr;
}

// The switch itself, with its two bookkeeping steps: the C++ exception state
// changes hands, and AddressSanitizer is told which stack comes next.
void FiberManager::switch_to(FiberRecord* next) {
    FiberRecord* self = running_;
    // The running fiber's state lives in the runtime's struct, and a record's
    // copy is empty while its fiber runs. Almost no switch happens inside a
    // catch block, so both sides are usually empty and nothing is copied.
    ExceptionState& thread_state = *thread_exceptions_;
    if (!thread_state.empty()) {
        self->exceptions = thread_state;
        thread_state = ExceptionState{};
    }
    if (!next->exceptions.empty()) {
        thread_state = next->exceptions;
        next->exceptions = ExceptionState{};
    }
    next->state = FiberState::Running;
    running_ = next;
    switched_from_ = self;
    ++switches_;
    // A finished fiber never resumes: nullptr lets ASan drop its fake frames at
    // once, so from here on nothing may touch an address-taken local of self's
    // (this function and exit_running have none).
    const bool finished = self->state == FiberState::Finished;
    sanitizer::start_switch(finished ? nullptr : &self->asan_fake_stack, next->asan_stack_bottom,
                            next->asan_stack_size);
    switch_routine_(&self->context, &next->context, reinterpret_cast<std::uintptr_t>(next));
    finish_switch();
}

// The first thing a fiber does after any switch lands on its stack: complete
// ASan's hand-over (this also learns main's stack bounds the first time main
// is left), then release a detached fiber that just ended: it could not free
// its own stack while running on it.
void FiberManager::finish_switch() {
    sanitizer::finish_switch(running_->asan_fake_stack, &switched_from_->asan_stack_bottom,
                             &switched_from_->asan_stack_size);
    if (dead_) {
        release(dead_);
        dead_ = nullptr;
    }
}

void FiberManager::yield() {
    FiberRecord* next = ready_.pop_front();
    if (!next) return;  // nobody else is ready: carry on
    running_->state = FiberState::Ready;
    ready_.push_back(running_);
    switch_to(next);
}

void FiberManager::park(WaitSite site) {
    running_->state = FiberState::Blocked;
    running_->waiting_for = site;
    switch_to(next_or_deadlock());
}

void FiberManager::wake(FiberRecord* fiber) {
    if (fiber->state != FiberState::Blocked)
        fatal("wake() on %s, which is not blocked", label(*fiber).text);
    fiber->state = FiberState::Ready;
    fiber->waiting_for = WaitSite{};
    ready_.push_back(fiber);
}

FiberRecord* FiberManager::next_or_deadlock() {
    FiberRecord* next = ready_.pop_front();
    if (!next) report_deadlock();
    return next;
}

// Every fiber's first frame. `arg` is its record, delivered by switch_context.
void FiberManager::fiber_main(std::uintptr_t arg) {
    auto* self = reinterpret_cast<FiberRecord*>(arg);
    FiberManager* manager = self->manager;
    manager->finish_switch();
    current_manager = manager;  // a no-op unless this fiber has TLS of its own
    if (manager->environment_) manager->environment_->fiber_starting(*self);
    try {
        self->run_body(self->body);
    } catch (...) {
        self->exception = std::current_exception();
    }
    if (manager->environment_) manager->environment_->fiber_ending(*self);
    manager->exit_running();
}

// The running fiber's function has ended. Wake whoever waits for it, then
// switch away for good; the record is released by join(), or right after the
// switch if the fiber is detached.
void FiberManager::exit_running() {
    FiberRecord* self = running_;
    self->state = FiberState::Finished;
    if (!self->service) ++finished_;
    if (self->detached) {
        if (self->exception) report_escaped_exception(*self);
        dead_ = self;
    }
    notify_ended(self);
    if (finished_ == spawned_ && main_waits_for_all_) {
        main_waits_for_all_ = false;
        wake(&main_);
    }
    switch_to(next_or_deadlock());
    // Unreachable: nobody queues a finished fiber, and a detached one's record
    // is already gone, so the message must not read it.
    fatal("a finished fiber was resumed");
}

void FiberManager::wait_for_all() {
    if (running_ != &main_)
        fatal("wait_for_all() was called from %s; only main may wait for all fibers",
              label(*running_).text);
    if (finished_ == spawned_) return;
    main_waits_for_all_ = true;
    park(WaitSite{"wait_for_all", nullptr, nullptr});
}

void FiberManager::report_deadlock() {
    std::fprintf(stderr, "fib: deadlock: no fiber is ready to run, and these are blocked:\n");
    for (FiberRecord* fiber = all_.front(); fiber; fiber = all_.next(fiber)) {
        if (fiber->state != FiberState::Blocked) continue;
        const WaitSite& site = fiber->waiting_for;
        std::fprintf(stderr, "  %s: in %s", label(*fiber).text, site.what);
        if (site.fiber) std::fprintf(stderr, ", waiting for %s", label(*site.fiber).text);
        if (site.object) std::fprintf(stderr, ", on %p", site.object);
        std::fprintf(stderr, "\n");
    }
    fatal("deadlock: every fiber is blocked and none can wake the others");
}

void FiberManager::set_environment(FiberEnvironment* environment, SwitchRoutine routine) {
    if (running_ != &main_ || all_.size() > 1)
        fatal("a fiber environment must be installed from main before any fiber is created");
    environment_ = environment;
    switch_routine_ = routine;
}

ManagerStats FiberManager::stats() const {
    ManagerStats stats;
    stats.spawned = spawned_;
    stats.finished = finished_;
    stats.switches = switches_;
    stats.records = all_.size() - 1;
    stats.stacks_created = stacks_.created();
    stats.stacks_pooled = stacks_.pooled();
    return stats;
}

}  // namespace fib
