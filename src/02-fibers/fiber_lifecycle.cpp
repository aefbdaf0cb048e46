// fiber_lifecycle.cpp — lesson 2: a fiber's life after its creation: started, joined or detached.
#include <cxxabi.h>

#include <exception>

#include "fib/fatal.hpp"
#include "fib/fiber_manager.hpp"

namespace fib {

void FiberManager::start(FiberRecord* fiber) {
    ++spawned_;
    fiber->state = FiberState::Ready;
    ready_.push_back(fiber);
    if (trace_) [[unlikely]] trace_->spawn(*fiber, *running_);
}

// The joiner parks until the fiber's end wakes it (exit_running), then
// releases the record and passes on the fiber's exception, if any. It parks
// in a loop: only the end may end the wait, whatever else wakes the joiner.
void FiberManager::join(FiberRecord* fiber) {
    FiberRecord* self = running_;
    if (fiber == self)
        fatal("%s joined itself; a fiber cannot wait for its own end", label(*self).text);
    if (fiber->joiner.fiber)
        fatal("%s tried to join %s, which %s is already joining", label(*self).text,
              label(*fiber).text, label(*fiber->joiner.fiber).text);
    fiber->joiner = begin_wait();
    while (fiber->state != FiberState::Finished) park(fiber->joiner, WaitSite{"join", fiber, nullptr});
    std::exception_ptr exception = std::move(fiber->exception);
    release(fiber);
    if (exception) std::rethrow_exception(exception);
}

void FiberManager::detach(FiberRecord* fiber) {
    if (fiber->joiner.fiber)
        fatal("detach() on %s, which %s is joining", label(*fiber).text,
              label(*fiber->joiner.fiber).text);
    fiber->detached = true;
    if (fiber->state != FiberState::Finished) return;  // released when it ends
    if (fiber->exception) report_escaped_exception(*fiber);
    release(fiber);
}

void FiberManager::abandon(FiberRecord* fiber) { release(fiber); }

// Nobody will ever join a detached fiber, so an exception escaping it has
// nowhere to go: say which fiber and what, and stop.
void FiberManager::report_escaped_exception(const FiberRecord& fiber) {
    try {
        std::rethrow_exception(fiber.exception);
    } catch (...) {
        int status = 0;
        const std::type_info* type = abi::__cxa_current_exception_type();
        char* type_name = abi::__cxa_demangle(type->name(), nullptr, nullptr, &status);
        const char* what = "";
        try {
            throw;
        } catch (const std::exception& error) {
            what = error.what();
        } catch (...) {
        }
        fatal("an exception of type %s escaped detached %s%s%s",
              type_name ? type_name : type->name(), label(fiber).text, *what ? ": " : "", what);
    }
}

namespace this_fiber {

void yield() { FiberManager::of_this_thread("this_fiber::yield() was called").yield(); }

std::uint64_t id() {
    FiberManager* manager = FiberManager::current();
    return manager ? manager->running()->id : 0;
}

const char* name() {
    FiberManager* manager = FiberManager::current();
    return manager ? manager->running()->name : "";
}

}  // namespace this_fiber
}  // namespace fib
