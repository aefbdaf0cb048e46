// fiber_join_condvar.cpp — lesson 3: join() rebuilt on a CondVar.
//
// From lesson 3 on, the build uses this file instead of src/fiber_join.cpp:
// the joiner waits on a CondVar that lives in its own frame for as long as it
// waits, and the fiber's end notifies it. The deadlock report reads the same
// as before ("in join, waiting for fiber 2").
#include "fib/condvar.hpp"
#include "fib/fiber_manager.hpp"

namespace fib {

// Called by join() on the joiner, after it has set `fiber->joiner`.
void FiberManager::wait_until_ended(FiberRecord* fiber) {
    CondVar ended;
    fiber->end_condvar = &ended;
    while (fiber->state != FiberState::Finished) ended.wait(WaitSite{"join", fiber, nullptr});
    fiber->end_condvar = nullptr;
}

// Called by exit_running() as `fiber` ends.
void FiberManager::notify_ended(FiberRecord* fiber) {
    if (fiber->end_condvar) fiber->end_condvar->notify_one();
}

}  // namespace fib
