// cancel.hpp — lesson 6: cancelling a fiber: its blocking waits give up, and say so.
//
//   fib::Fiber client(serve, std::move(socket));
//   ...
//   client.cancel();    // its read returns -1 with ECANCELED; it cleans up and ends
//   client.join();
//
// A cancel is a request, and it stays: from then on every wait of this
// lesson's that the fiber makes, the one it is blocked in included, returns at
// once with a result of its own:
//
//   fib::io::read, write_all, send_all, accept, connect   -1, errno ECANCELED
//   fib::io::wait, Waiter::wait                           revents 0
//   fib::sleep_for, sleep_until                           false
//   fib::wait_for(CondVar&, timeout)                      WaitResult::cancelled()
//   fib::wait_any                                         Ready::cancelled()
//   Event::wait                                           false
//
// The fiber sees the result, cleans up (its destructors run as for any
// return) and ends: nothing unwinds it from outside. Waits that cannot tell
// their caller, lesson 3's CondVar::wait and Channel, join() and yield(), are
// not cancelled: a caller that loops on them would otherwise spin for ever.
//
// Why this shape. Go cancels through a context passed to every call, with a
// Done channel and a deadline; C++20's std::stop_token carries the same
// request, thread-safe, with callbacks. Both make the request a value the
// caller threads through; here the request belongs to the fiber, as a
// thread's cancellation state does, since our waits already know which fiber
// waits. Structured concurrency (a nursery that cancels its children and
// waits for them) is built on top: a server keeps its client fibers and, to
// stop, cancels each and waits for them all (chat_server.cpp, echo). Like
// std::stop_token, and unlike pthread_cancel, nothing is unwound by force.
// A cancel, like a notify, comes from the fiber's own thread.
#pragma once

#include "fib/fiber_manager.hpp"

namespace fib {

// While it lives, a cancel of the running fiber ends the fiber's wait: the
// canceller calls `undo` (if any) to take the fiber off what it waits on, then
// wakes it. A wait marks itself so around its park(), and asks cancelled()
// before parking and after waking.
class CancelScope {
public:
    // `token`: the wait (begin_wait) that a cancel ends, the running fiber's.
    explicit CancelScope(ParkToken token, void (*undo)(void*) = nullptr,
                         void* context = nullptr);
    ~CancelScope();
    CancelScope(const CancelScope&) = delete;
    CancelScope& operator=(const CancelScope&) = delete;

    // A cancel ended the wait (it took the hook off the fiber and woke it).
    bool woke_it() const { return fiber_->cancel_hook != &hook_; }

private:
    FiberRecord* fiber_;
    CancelHook hook_;
};

}  // namespace fib
