// scope.cpp — lesson 12: a Scope's children entering and leaving, its cancel, and the wait at its end.
#include "fib/scope.hpp"

#include <cstdio>
#include <system_error>

#include "fib/fatal.hpp"

namespace fib {

Scope::Scope(const ScopeOptions& options)
    : manager_(&FiberManager::of_this_thread("fib::scope was called")),
      name_(options.name ? options.name : "fib::scope"),
      deadline_(deadline_after(options.timeout)) {}

void Scope::check_thread(const char* operation) const {
    if (FiberManager::current() != manager_)
        fatal("fib::Scope::%s (%s) from another thread: a scope's children are fibers of the thread "
              "that opened it, and only that thread may spawn or cancel them",
              operation, name_);
}

// A child joins the list as its function starts. One spawned into a scope
// already cancelled cancels itself: its first wait ends at once.
Scope::Member::Member(Scope& owner) : scope(owner), fiber(owner.manager_->running()) {
    scope.members_.push_back(this);
    if (scope.cancelled_) scope.manager_->cancel(fiber);
}

// The last touch of the scope by this child: after the notify, the caller may
// return from scope() and the Scope is gone.
Scope::Member::~Member() {
    scope.members_.remove(this);
    if (--scope.live_ == 0) scope.ended_.notify_all();
}

void Scope::cancel() {
    check_thread("cancel");
    cancelled_ = true;
    for (Member* member = members_.front(); member; member = members_.next(member))
        manager_->cancel(member->fiber);
}

void Scope::failed(const Member& member, std::exception_ptr exception) {
    // A sibling's fib::Cancelled after the scope was cancelled is the cancel's
    // own answer, not a failure.
    bool is_cancel = false;
    const char* what = "an exception not derived from std::exception";
    try {
        std::rethrow_exception(exception);
    } catch (const Cancelled& cancelled) {
        is_cancel = true;
        what = cancelled.what();
    } catch (const std::exception& error) {
        what = error.what();
    } catch (...) {
    }
    if (is_cancel && cancelled_) return;
    if (!first_) {
        first_ = std::move(exception);
        cancel();
        return;
    }
    std::fprintf(stderr, "fib::scope (%s): %s also failed, after the exception the scope rethrows: %s\n",
                 name_, label(*member.fiber).text, what);
}

// The caller's wait in the first phase: until the children have ended (a
// notify), the deadline passes, or the caller is cancelled. Lesson 3's wait
// says a cancel by throwing; lesson 6's wait_for by its result.
WaitResult Scope::wait_for_end_or_deadline(const WaitSite& site) {
    if (deadline_ != Clock::time_point::max()) return wait_for(ended_, deadline_ - Clock::now());
    try {
        ended_.wait(site);
    } catch (const Cancelled&) {
        return {WaitResult::kCancelled};
    }
    return {WaitResult::kNotified};
}

void Scope::wait_for_children() {
    const WaitSite site{name_, nullptr, this};
    while (live_ > 0 && !cancelled_) {
        const WaitResult result = wait_for_end_or_deadline(site);
        if (result.timed_out() && live_ > 0) {
            deadline_passed_ = true;
            cancel();
        } else if (result.cancelled()) {
            cancel();  // the caller was cancelled: pass it on, as join() does
        }
    }
    // Cancelled: each child ends when its waits have said so. Wait for that,
    // shielded, since the caller's own cancel has been passed on already.
    const CancelShield shield;
    while (live_ > 0) ended_.wait(site);
}

void Scope::rethrow_first() {
    if (first_) std::rethrow_exception(first_);
}

}  // namespace fib
