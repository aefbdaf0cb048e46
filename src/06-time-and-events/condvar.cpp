// condvar.cpp — lesson 6: lesson 3's CondVar, whose wait a cancel ends.
//
// Replaces lesson 3's condvar.cpp from stage 6 on: a cancel (cancel.hpp) ends
// CondVar::wait, which takes its place off the list (the next notify reaches
// the next waiter) and throws Cancelled, since it returns nothing that could
// say so. A fiber cancelled before it waits throws at once.
#include "fib/condvar.hpp"

#include "fib/cancel.hpp"
#include "fib/fatal.hpp"

namespace fib {

CondVar::~CondVar() {
    if (!waiters_.empty())
        fatal("a CondVar was destroyed while %s (and %zu more) waited on it",
              label(*waiters_.front()->token.fiber).text, waiters_.size() - 1);
}

void CondVar::wait() { wait(WaitSite{"CondVar::wait", nullptr, this}); }

// The waiting fiber's place on the list lives in its own frame, with the
// token of this wait: a notify pops the place and wakes the token. A fiber is
// on the list exactly while it waits here, so a notify always finds a waiter.
void CondVar::wait(const WaitSite& site) {
    FiberManager& manager = FiberManager::of_this_thread("CondVar::wait() was called");
    if (this_fiber::cancelled()) throw Cancelled(site.what);
    Waiting place{manager.begin_wait(), {}};
    struct Leave {
        CondVar& condvar;
        Waiting& place;
    } leave{*this, place};
    const CancelScope cancellable(place.token, [](void* context) {
        Leave& leave = *static_cast<Leave*>(context);
        leave.condvar.remove(leave.place);
    }, &leave);
    park_in(place, site);
    if (cancellable.woke_it()) throw Cancelled(site.what);
}

void CondVar::park_in(Waiting& place, const WaitSite& site) {
    FiberManager* manager = place.token.fiber->manager;
    if (!waiters_.empty() && manager_ != manager)
        fatal("%s waited on a CondVar whose waiters belong to another thread's FiberManager",
              label(*place.token.fiber).text);
    manager_ = manager;
    waiters_.push_back(&place);
    manager->park(place.token, site);
}

// Waking is only for the waiters' own thread: the ready queue is not
// thread-safe.
FiberManager& CondVar::manager_for_notify(const char* operation) const {
    if (FiberManager::current() != manager_)
        fatal("CondVar::%s() was called from another thread than its waiters'; a CondVar "
              "belongs to one FiberManager",
              operation);
    return *manager_;
}

void CondVar::notify_one() {
    if (waiters_.empty()) return;
    manager_for_notify("notify_one").wake(waiters_.pop_front()->token);
}

void CondVar::notify_all() {
    if (waiters_.empty()) return;
    FiberManager& manager = manager_for_notify("notify_all");
    while (Waiting* place = waiters_.pop_front()) manager.wake(place->token);
}

}  // namespace fib
