// cancel.hpp — lesson 6: cancelling a fiber: its blocking waits give up, and say so.
//
//   fib::Fiber client(serve, std::move(socket));
//   ...
//   client.cancel();    // its read returns -1 with ECANCELED; it cleans up and ends
//   client.join();
//
// A cancel is a request, and it stays: from then on every wait that the fiber
// makes, the one it is blocked in included, ends at once and says so in its
// own way:
//
//   fib::io::read, write_all, send_all, accept, connect   -1, errno ECANCELED
//   fib::io::wait, Waiter::wait                           revents 0
//   fib::sleep_for, sleep_until                           false
//   fib::wait_for(CondVar&, timeout)                      WaitResult::cancelled()
//   fib::wait_any                                         Ready::cancelled()
//   Event::wait                                           false
//   Channel::send, receive (lesson 3's)                   false, std::nullopt
//   CondVar::wait (lesson 3's)                            throws fib::Cancelled
//   join()                                                passes the cancel on (below)
//
// The fiber sees the result, cleans up (its destructors run as for any
// return) and ends: nothing unwinds it from outside. CondVar::wait returns
// nothing that could say so, and a caller that loops on it (`while (!ready)
// changed.wait();`) would spin for ever if it just returned: it throws
// Cancelled, a std::system_error with ECANCELED, which unwinds the caller's
// loop like any error. join() waits for a fiber that may use the joiner's
// frame (its captures point there), so it does not give up: it cancels the
// fiber it joins, whose waits then end, and waits for its end as before. So
// cancelling a fiber cancels what it joins, as a nursery cancels its children.
// yield() is not a wait, and wait_for_all() is main's wait for the end of
// everything: a cancel changes neither.
//
// A wait that must not end early, a clean-up that waits for what it owns to
// let go, opens a CancelShield: while it lives, the fiber's cancels are kept,
// not acted on, and its waits go on as if none had come.
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

#include <system_error>

#include "fib/fiber_manager.hpp"

namespace fib {

// What a cancelled wait that returns nothing throws (CondVar::wait, and the
// waits of later lessons built like it): a std::system_error with ECANCELED,
// naming the wait.
class Cancelled : public std::system_error {
public:
    explicit Cancelled(const char* what);
};

// While it lives, the running fiber's cancels wait: cancel() still records
// the request, but wakes nothing, and this_fiber::cancelled() says false.
// When the last shield goes, the request is there for the fiber's next wait.
class CancelShield {
public:
    CancelShield();
    ~CancelShield();
    CancelShield(const CancelShield&) = delete;
    CancelShield& operator=(const CancelShield&) = delete;

private:
    FiberRecord* fiber_;
};

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
