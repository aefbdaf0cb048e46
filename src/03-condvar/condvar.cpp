// condvar.cpp — lesson 3: CondVar on the manager's park() and wake().
#include "fib/condvar.hpp"

#include "fib/fatal.hpp"

namespace fib {

CondVar::~CondVar() {
    if (!waiters_.empty())
        fatal("a CondVar was destroyed while %s (and %zu more) waited on it",
              label(*waiters_.front()).text, waiters_.size() - 1);
}

void CondVar::wait() { wait(WaitSite{"CondVar::wait", nullptr, this}); }

// A waiting fiber sits in waiters_ through its queue_link: it is not in the
// ready queue while it waits, so the one link serves both lists.
void CondVar::wait(const WaitSite& site) {
    FiberManager* manager = &FiberManager::of_this_thread("CondVar::wait() was called");
    if (!waiters_.empty() && manager_ != manager)
        fatal("%s waited on a CondVar whose waiters belong to another thread's FiberManager",
              label(*manager->running()).text);
    manager_ = manager;
    waiters_.push_back(manager->running());
    manager->park(site);
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
    manager_for_notify("notify_one").wake(waiters_.pop_front());
}

void CondVar::notify_all() {
    if (waiters_.empty()) return;
    FiberManager& manager = manager_for_notify("notify_all");
    while (FiberRecord* fiber = waiters_.pop_front()) manager.wake(fiber);
}

}  // namespace fib
