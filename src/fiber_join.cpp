// fiber_join.cpp — lesson 2: how join() waits for a fiber's end: park the joiner, wake it at the end.
//
// These two functions are an extension point. From lesson 3 on, the build
// replaces this file with src/fiber_join_condvar.cpp, which waits on a CondVar.
#include "fib/fiber_manager.hpp"

namespace fib {

// Called by join() on the joiner, after it has set `fiber->joiner`.
void FiberManager::wait_until_ended(FiberRecord* fiber) {
    if (fiber->state != FiberState::Finished) park(WaitSite{"join", fiber, nullptr});
}

// Called by exit_running() as `fiber` ends.
void FiberManager::notify_ended(FiberRecord* fiber) {
    if (fiber->joiner) wake(fiber->joiner);
}

}  // namespace fib
