// fiber_switch.cpp — lesson 2: the switch from one fiber to the next, a fiber's first frame and its end.
#include <cxxabi.h>

#include <utility>

#include "fib/fatal.hpp"
#include "fib/fiber_manager.hpp"
#include "fib/sanitizer.hpp"

namespace fib {

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
    if (trace_) [[unlikely]] trace_->switched(*self, *next);
    // A finished fiber never resumes: nullptr lets ASan drop its fake frames at
    // once, so from here on nothing may touch an address-taken local of self's
    // (this function and exit_running have none).
    const bool finished = self->state == FiberState::Finished;
    sanitizer::start_switch(finished ? nullptr : &self->asan_fake_stack, next->asan_stack_bottom,
                            next->asan_stack_size);
    sanitizer::tsan_switch_to(next->tsan_fiber);  // nothing instrumented after it: see sanitizer.hpp
    switch_context(&self->context, &next->context, reinterpret_cast<std::uintptr_t>(next));
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

// Every fiber's first frame. `arg` is its record, delivered by switch_context.
// (glibc's forced unwind carries no C++ object, so UBSan's check that a caught
// reference is not null would stop the program before the message below.)
[[gnu::no_sanitize("null")]] void FiberManager::fiber_main(std::uintptr_t arg) {
    auto* self = reinterpret_cast<FiberRecord*>(arg);
    FiberManager* manager = self->manager;
    manager->finish_switch();
    try {
        self->run_body(self->body);
    } catch (abi::__forced_unwind&) {
        // pthread_exit() or pthread_cancel() unwinds with this "exception", which
        // must be rethrown to end the thread; swallowed, glibc aborts with "FATAL:
        // exception not rethrown". Rethrown, it would end the thread under every
        // other fiber. Neither is an end for a fiber: stop with its name.
        fatal("%s was unwound by pthread_exit() or pthread_cancel(), which end the whole "
              "thread with every fiber on it; end a fiber by returning from its function",
              label(*self).text);
    } catch (...) {
        self->exception = std::current_exception();
    }
    manager->exit_running();
}

// The running fiber's function has ended. Wake whoever joins it, then switch
// away for good; the record is released by join(), or right after the switch
// if the fiber is detached.
void FiberManager::exit_running() {
    FiberRecord* self = running_;
    self->state = FiberState::Finished;
    ++finished_;
    if (trace_) [[unlikely]] trace_->end(*self);
    if (self->detached) {
        if (self->exception) report_escaped_exception(*self);
        dead_ = self;
    }
    wake(self->joiner);
    if (finished_ == spawned_) wake(std::exchange(main_waits_for_all_, ParkToken{}));
    switch_to(next_or_deadlock());
    // Unreachable: nobody queues a finished fiber, and a detached one's record
    // is already gone, so the message must not read it.
    fatal("a finished fiber was resumed");
}

}  // namespace fib
