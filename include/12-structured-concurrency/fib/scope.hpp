// scope.hpp — lesson 12: a Scope (a nursery): the fibers spawned into it cannot outlive it.
//
//   fib::scope([&](fib::Scope& scope) {          // the body runs in a fiber of the scope
//       scope.spawn(fetch, "a");
//       scope.spawn(fetch, "b");
//   });                                          // returns once all three have ended
//
//   bool in_time = fib::with_timeout(200ms, [&] { reply = ask(server); });
//   fib::shielded(1s, [&] { fib::io::write_all(fd, "bye\r\n", 5); });   // clean-up when cancelled
//
// The rule: scope() returns only after every fiber spawned into the scope has
// ended, its body included, whatever happened. So a child may use anything the
// code around scope() owns (its locals, captured by reference), and nothing it
// started can still run when that code goes on: the lifetime of a fiber is a
// block of the program text again, as a function call's is.
//
// What ends a scope early: a cancel. Scope::cancel() cancels every child (lesson
// 6's cancel: each wait it is in, or will begin, ends and says so) and every
// child spawned later starts cancelled. Three things call it:
//
//   the first exception    a child (or the body) lets one escape: the scope
//                          keeps it, cancels the siblings, and scope() rethrows
//                          it once they have all ended
//   the deadline           ScopeOptions::timeout passes (with_timeout)
//   the code around it     the fiber that called scope() is cancelled while it
//                          waits there: the cancel is passed on, as join() does
//
// Because the last one passes on, scopes nest: cancelling an outer scope cancels
// its children; a child waiting in an inner scope passes that on to the inner
// children. An inner deadline can end its own children sooner; it can never
// keep them running past the outer one. A cancel is a request, as in lesson 6:
// nothing is unwound by force, so a child that never waits (a loop with no
// wait and no check of this_fiber::cancelled()) keeps its scope open until it
// returns. The stall detector (stall_detector.hpp) is how you find it.
//
// Exceptions. The first one to escape a child is rethrown by scope(), as it
// was thrown. A sibling that then ends with fib::Cancelled (the cancel's own
// error, from a wait that returns nothing) has done what it was asked and is
// not a failure. Any other exception that escapes after the first is
// *reported*, on stderr with the fiber's name, and dropped: C++ has no
// exception group to carry them all (Trio and Python 3.11 raise one), and the
// first is the cause of the others more often than not.
//
// Lifetime rules. A Scope lives inside scope(), on the caller's stack; the
// Scope& handed to the body may be passed to the children (so they spawn
// siblings), and used by any fiber of the same thread that ends before the
// scope does. spawn() and cancel() from another thread stop the program with
// a message, as every misuse does. What a child owns (the callable and its
// arguments) is destroyed on the child's stack before the child counts as
// ended, so nothing of it outlives the scope either.
//
// Why the body runs in a fiber of its own, not in the caller's. A cancel in
// this course belongs to a fiber and stays (lesson 6): if the scope cancelled
// the caller's own fiber to stop its body, the caller would still be cancelled
// after scope() returned, in code that has nothing to do with the scope. Run in
// a child, the body is cancelled with its siblings and the caller is not. The
// price is one spawn per scope; this_fiber::id() and fiber_local values inside
// the body are the body fiber's.
#pragma once

#include <cxxabi.h>

#include <cstddef>
#include <exception>
#include <functional>
#include <type_traits>
#include <utility>

#include "fib/cancel.hpp"
#include "fib/condvar.hpp"
#include "fib/fiber.hpp"
#include "fib/intrusive_list.hpp"
#include "fib/timer.hpp"

namespace fib {

struct ScopeOptions {
    // Names the body's fiber and the scope in messages (the deadlock report
    // shows the caller waiting at "fib::scope").
    const char* name = nullptr;
    // The scope is cancelled this long after scope() was called; max(): never.
    Clock::duration timeout = Clock::duration::max();
};

class Scope {
public:
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

    // Starts a child, as fib::Fiber does (the function and its arguments are
    // decay-copied onto its stack), owned by this scope: no join, no detach.
    template <class Function, class... Args>
        requires std::invocable<std::decay_t<Function>, std::decay_t<Args>...>
    void spawn(Function&& function, Args&&... args) {
        spawn(FiberOptions{}, std::forward<Function>(function), std::forward<Args>(args)...);
    }
    template <class Function, class... Args>
        requires std::invocable<std::decay_t<Function>, std::decay_t<Args>...>
    void spawn(const FiberOptions& options, Function&& function, Args&&... args);

    // Cancels every child, now and to come. From the scope's thread.
    void cancel();

    bool cancelled() const { return cancelled_; }
    // The deadline passed before every child had ended (and cancelled them).
    bool deadline_passed() const { return deadline_passed_; }
    // Children spawned and not yet ended, the body included.
    std::size_t live() const { return live_; }

private:
    // One child, as the scope sees it: in the list while its function runs,
    // kept in the child's own frame (no allocation).
    struct Member {
        explicit Member(Scope& scope);
        ~Member();  // leaves the scope: the last one out wakes the caller
        Scope& scope;
        FiberRecord* fiber;
        ListLink<Member> link;
    };

    explicit Scope(const ScopeOptions& options);
    template <class Body>
    friend void scope(const ScopeOptions& options, Body&& body);

    // Every child starts here: it joins the list, runs its function (whose
    // copies end inside the try, before the member leaves) and hands an
    // escaping exception to failed(). (glibc's forced unwind carries no C++
    // object, so UBSan's check that a caught reference is not null would stop
    // the program before lesson 2's message, as in FiberManager::fiber_main.)
    template <class Function, class... Args>
    [[gnu::no_sanitize("null")]] static void run_child(Scope* scope, Function&& function, Args&&... args) {
        Member member(*scope);
        try {
            std::invoke(std::decay_t<Function>(std::move(function)), std::decay_t<Args>(std::move(args))...);
        } catch (abi::__forced_unwind&) {
            throw;  // pthread_exit's unwind is not an exception to keep (lesson 2 stops with a message)
        } catch (...) {
            scope->failed(member, std::current_exception());
        }
    }

    void check_thread(const char* operation) const;
    void failed(const Member& member, std::exception_ptr exception);
    // The caller's wait at the end of scope(): for the children, the
    // deadline, or a cancel of the caller; then, shielded, for the children.
    void wait_for_children();
    WaitResult wait_for_end_or_deadline(const WaitSite& site);
    void rethrow_first();

    FiberManager* manager_;
    const char* name_;
    Clock::time_point deadline_;
    IntrusiveList<Member, &Member::link> members_;
    std::size_t live_ = 0;
    bool cancelled_ = false;
    bool deadline_passed_ = false;
    std::exception_ptr first_;
    CondVar ended_;  // notified when live_ drops to 0
};

template <class Function, class... Args>
    requires std::invocable<std::decay_t<Function>, std::decay_t<Args>...>
void Scope::spawn(const FiberOptions& options, Function&& function, Args&&... args) {
    check_thread("spawn");
    ++live_;
    try {
        Fiber child(options, &run_child<std::decay_t<Function>, std::decay_t<Args>...>, this,
                    std::forward<Function>(function), std::forward<Args>(args)...);
        child.detach();
    } catch (...) {
        --live_;  // no fiber was started (no stack, or a copy threw)
        throw;
    }
}

// Runs body(scope) in a fiber of a new scope and returns when every fiber of
// the scope has ended; rethrows the first exception that escaped one.
template <class Body>
void scope(const ScopeOptions& options, Body&& body) {
    Scope nursery(options);
    nursery.spawn(FiberOptions{.name = options.name}, std::forward<Body>(body), std::ref(nursery));
    nursery.wait_for_children();
    nursery.rethrow_first();
}

template <class Body>
void scope(Body&& body) {
    scope(ScopeOptions{}, std::forward<Body>(body));
}

// Runs function() in a scope with a deadline. True when it ended before the
// scope was cancelled (by the deadline, or by a cancel of the caller passed on);
// false when a cancel came first: the function saw it in its waits and ended.
template <class Function>
bool with_timeout(Clock::duration timeout, Function&& function) {
    bool cancelled = false;
    scope(ScopeOptions{.name = "with_timeout", .timeout = timeout}, [&](Scope& inner) {
        function();
        cancelled = inner.cancelled();
    });
    return !cancelled;
}

// Clean-up that must run even in a cancelled fiber (closing a connection
// politely), and must not run for ever: a CancelShield keeps the caller's
// cancel from reaching it, and the scope's deadline bounds it. What with_timeout
// returns.
template <class Function>
bool shielded(Clock::duration timeout, Function&& function) {
    const CancelShield shield;
    return with_timeout(timeout, std::forward<Function>(function));
}

}  // namespace fib
