// cancel.cpp — lesson 6: asking a fiber to give up its waits, and waking it if it is in one.
#include "fib/cancel.hpp"

#include <cerrno>
#include <utility>

#include "fib/fatal.hpp"

namespace fib {

// Only the fiber's own thread may cancel it, as only it may wake it: the
// ready queue and the wait lists are not thread-safe.
void FiberManager::cancel(FiberRecord* fiber) {
    if (current_ != this)
        fatal("cancel() on %s from a thread that is not its manager's", label(*fiber).text);
    if (fiber->state == FiberState::Finished) return;
    fiber->cancel_requested = true;
    // Not parked in the hook's wait (running, or already woken by another of
    // its wakers), or shielded: its next look at cancelled() sees the request.
    if (fiber->cancel_shields > 0) return;
    if (!fiber->cancel_hook || !parked(fiber->cancel_hook->token)) return;
    const CancelHook* hook = std::exchange(fiber->cancel_hook, nullptr);
    if (hook->undo) hook->undo(hook->context);
    wake(hook->token);
}

CancelScope::CancelScope(ParkToken token, void (*undo)(void*), void* context)
    : fiber_(token.fiber), hook_{undo, context, token} {
    fiber_->cancel_hook = &hook_;
}

CancelScope::~CancelScope() { fiber_->cancel_hook = nullptr; }

bool this_fiber::cancelled() {
    FiberManager* manager = FiberManager::current();
    return manager && manager->running()->cancel_requested && manager->running()->cancel_shields == 0;
}

Cancelled::Cancelled(const char* what) : std::system_error(ECANCELED, std::generic_category(), what) {}

CancelShield::CancelShield()
    : fiber_(FiberManager::of_this_thread("a CancelShield was opened").running()) {
    ++fiber_->cancel_shields;
}

CancelShield::~CancelShield() { --fiber_->cancel_shields; }

}  // namespace fib
