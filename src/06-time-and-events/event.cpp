// event.cpp — lesson 6: Event: a flag for its own thread, an eventfd for the others.
#include "fib/event.hpp"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <system_error>

#include "fib/cancel.hpp"
#include "fib/fatal.hpp"
#include "fib/waiter.hpp"

namespace fib {

Event::Event()
    : eventfd_(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)), owner_(FiberManager::current()) {
    if (!eventfd_) throw std::system_error(errno, std::generic_category(), "eventfd for an Event");
}

Event::~Event() {
    if (waiting_.fiber) fatal("an Event was destroyed while %s waited on it", label(*waiting_.fiber).text);
    FiberManager* owner = owner_.load(std::memory_order_acquire);
    if (owner_thread_ && owner != FiberManager::current() && FiberManager::alive(owner, owner_thread_))
        fatal("an Event was destroyed on another thread than its own (thread %d), which still runs "
              "and whose Waiter has watched its eventfd; destroy it on its own thread, where the "
              "close tells the Waiter", owner_thread_);
}

// On the owner's thread, in fiber code, the fibers' queues are ours to touch:
// raise the flag and wake the waiter, if any (unless something else already
// woke it). Anywhere else, only the kernel may carry the news.
void Event::set() {
    FiberManager* owner = owner_.load(std::memory_order_acquire);
    if (!owner || owner != FiberManager::current()) {
        set_through_eventfd();
        return;
    }
    signaled_.store(true, std::memory_order_relaxed);
    owner->wake(waiting_);  // a no-op unless a fiber is parked in that wait
}

// Marked before the write, and for good: from then on try_wait() reads the
// eventfd, as it must once any write may be on its way; until then it saves
// that system call. (Cleared again, the mark would race with a write that has
// not landed yet.) write(2) and a lock-free atomic are async-signal-safe. A
// handler must leave errno as it found it (the code it interrupted may be
// about to read errno), and a failed write sets it: say, EAGAIN when the
// counter is full (set 2^64 - 2 times without a wait). Then the Event is
// signaled anyway, which is all a set promises.
void Event::set_through_eventfd() {
    const int saved_errno = errno;
    eventfd_used_.store(true, std::memory_order_release);
    const std::uint64_t one = 1;
    while (::write(eventfd_.get(), &one, sizeof one) < 0 && errno == EINTR) {
    }
    errno = saved_errno;
}

// Reading an eventfd returns its counter and sets it to 0: signaled -> not.
bool Event::try_wait() {
    const bool flag = signaled_.exchange(false, std::memory_order_relaxed);
    if (!eventfd_used_.load(std::memory_order_acquire)) return flag;
    // Not signaled is an answer, not an error: the read's EAGAIN is not left
    // in errno, which the fiber that looks may be about to read, and so may
    // every other fiber of the thread while they share one errno.
    const int saved_errno = errno;
    std::uint64_t count = 0;
    for (;;) {
        if (::read(eventfd_.get(), &count, sizeof count) == sizeof count) return true;
        if (errno == EAGAIN) {
            errno = saved_errno;
            return flag;
        }
        if (errno != EINTR) fatal("reading an Event's eventfd failed: %d", errno);
    }
}

// The first fiber to wait makes the Event its thread's, if no thread has it.
void Event::attach(ParkToken waiting) {
    FiberRecord* fiber = waiting.fiber;
    FiberManager* owner = nullptr;
    owner_.compare_exchange_strong(owner, fiber->manager, std::memory_order_acq_rel);
    if (owner && owner != fiber->manager)
        fatal("%s waited on an Event that belongs to another thread's FiberManager",
              label(*fiber).text);
    if (waiting_.fiber && waiting_.fiber != fiber)
        fatal("%s waited on an Event that %s already waits on; one fiber at a time may",
              label(*fiber).text, label(*waiting_.fiber).text);
    waiting_ = waiting;
    owner_thread_ = fiber->manager->thread_id();
}

// One wait, three wakers: attached, a same-thread set() wakes it; the
// eventfd's registration with the Waiter covers the other threads; and a
// cancel ends it. Woken with nothing set (another thread's write was read by
// a try_wait() in between), it waits again.
bool Event::wait() {
    FiberManager& manager = FiberManager::of_this_thread("Event::wait() was called");
    bool signaled = false;
    for (;;) {
        const ParkToken me = manager.begin_wait();
        attach(me);
        signaled = try_wait();
        if (signaled || this_fiber::cancelled()) break;
        Waiter& waiter = Waiter::of_this_thread("Event::wait() had to wait");
        Waiter::Waiting readable{eventfd_.get(), POLLIN, 0, me};
        waiter.watch(readable);
        {
            const CancelScope cancellable(me);
            manager.park(me, WaitSite{"Event::wait", nullptr, this});
        }
        waiter.unwatch(readable);
        detach();
    }
    detach();
    return signaled;
}

}  // namespace fib
