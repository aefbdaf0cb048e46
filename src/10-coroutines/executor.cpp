// executor.cpp — lesson 10: the Executor's ready queue, its fiber, and the root tasks it keeps.
#include "fib/executor.hpp"

#include <exception>
#include <utility>

#include "fib/cancel.hpp"
#include "fib/fatal.hpp"
#include "fib/fiber.hpp"

namespace fib {

// A spawned task runs inside a root coroutine of its own, which awaits it.
// The root starts suspended (spawn queues it), and frees its own frame at its
// end (final_suspend does not suspend); its promise's destructor takes it off
// the Executor's list, whether it ended or cancel_all() destroyed it. Its
// name is OnExecutor::task, which every task it awaits inherits.
struct Executor::RootPromise : detail::OnExecutor {
    std::size_t index = 0;  // in roots_
    std::uint64_t id = 0;   // what spawn() returned, for cancel(); OnExecutor::root too

    RootTask get_return_object() noexcept;
    std::suspend_always initial_suspend() noexcept { return {}; }
    std::suspend_never final_suspend() noexcept { return {}; }
    void return_void() noexcept {}
    // The task threw and nobody awaited it to catch it: like an exception that
    // escapes a thread, it ends the program, naming what threw.
    void unhandled_exception() noexcept {
        const char* what = "an exception that is not a std::exception";
        try {
            throw;
        } catch (const std::exception& error) {
            what = error.what();
        } catch (...) {
        }
        fatal("task '%s' ended with an exception nobody caught: %s", task, what);
    }
    ~RootPromise() { executor->forget(*this); }
};

struct Executor::RootTask {
    using promise_type = RootPromise;
    Root handle;
};

Executor::RootTask Executor::RootPromise::get_return_object() noexcept {
    return RootTask{Root::from_promise(*this)};
}

Executor::RootTask Executor::run_root(Task<void> task) { co_await std::move(task); }

Executor::Executor() : manager_(FiberManager::of_this_thread("an Executor was created")) {}

// The wait for the Executor's fiber to end is shielded (lesson 6): a cancel of
// the fiber in the destructor must not let it return while that fiber runs.
Executor::~Executor() {
    cancel_all();
    const CancelShield until_the_fiber_ends;
    while (started_) changed_.wait(WaitSite{"~Executor", self_, this});
}

std::uint64_t Executor::spawn(Task<void> task, const char* name) {
    if (FiberManager::current() != &manager_) fatal("Executor::spawn() was called from another thread");
    const Root root = run_root(std::move(task)).handle;
    root.promise().executor = this;
    root.promise().task = name;
    root.promise().index = roots_.size();
    root.promise().id = next_id_++;
    root.promise().root = root.promise().id;
    roots_.push_back(root);
    ++stats_.spawned;
    schedule(waker_of(root));
    return root.promise().id;
}

// Swap-remove: the last root takes the place of the one that goes.
void Executor::forget(RootPromise& root) {
    Root last = roots_.back();
    roots_[root.index] = last;
    last.promise().index = root.index;
    roots_.pop_back();
    if (roots_.empty()) changed_.notify_all();
}

void Executor::schedule(const Waker& waker) {
    if (FiberManager::current() != &manager_)
        fatal("Executor::schedule() was called from another thread; another thread wakes a task "
              "through an eventfd (co::Event::set)");
    ready_.push_back(waker);
    start_if_stopped();
    manager_.wake(std::exchange(parked_, ParkToken{}));
}

// The Executor's fiber. Each turn: one pass over the tasks ready now (those
// they make ready wait for the next pass), then a yield, so that the other
// fibers, the Waiter's among them, run between passes. With no task ready it
// parks until schedule(); with no task left at all, it ends. While it resumes
// a task, its fiber may not park (refuse_park).
void Executor::run() {
    self_ = manager_.running();
    self_->on_park = &Executor::refuse_park;
    self_->on_park_context = this;
    while (!roots_.empty()) {
        if (ready_.empty()) {
            parked_ = manager_.begin_wait();
            manager_.park(parked_, WaitSite{"Executor: no task is ready", nullptr, this});
            continue;
        }
        for (std::size_t pass = ready_.size(); pass > 0 && !ready_.empty(); --pass) {
            const Waker next = ready_.front();
            ready_.pop_front();
            ++stats_.resumes;
            resuming_ = next.task;
            next.coroutine.resume();
            resuming_ = nullptr;
        }
        if (manager_.ready_count() > 0) manager_.yield();
    }
    self_->on_park = nullptr;
    self_ = nullptr;
    started_ = false;
    changed_.notify_all();
}

// A fiber's wait from inside a task: see executor.hpp.
void Executor::refuse_park(const FiberRecord& fiber, const WaitSite& site, void* context) {
    const Executor& executor = *static_cast<const Executor*>(context);
    if (!executor.resuming_) return;  // the Executor's own wait for a task to be ready
    fatal("task '%s' called %s, a fiber's wait, which would park %s (the Executor's) in the middle "
          "of the task: in a task, co_await instead (co::sleep_for, co::readable, co::writable; "
          "co::in_fiber for code that must block like a fiber)",
          executor.resuming_, site.what, label(fiber).text);
}

void Executor::start_if_stopped() {
    if (started_) return;
    started_ = true;
    ++stats_.fibers_started;
    Fiber({.name = "executor"}, [this] { run(); }).detach();
}

void Executor::check_not_a_task(const char* operation) const {
    if (FiberManager::current() != &manager_)
        fatal("Executor::%s() was called from another thread", operation);
    if (running_a_task())
        fatal("Executor::%s() was called from a task (on the executor's own fiber); call it from "
              "another fiber, such as main", operation);
}

void Executor::wait() {
    check_not_a_task("wait");
    while (!roots_.empty()) changed_.wait(WaitSite{"Executor::wait", self_, this});
}

bool Executor::cancel(std::uint64_t id) {
    check_not_a_task("cancel");
    for (const Root root : roots_)
        if (root.promise().id == id) {
            // Its handles in the ready queue go with it: a frame destroyed is never resumed.
            std::erase_if(ready_, [id](const Waker& ready) { return ready.root == id; });
            root.destroy();
            return true;
        }
    return false;
}

void Executor::cancel_all() {
    check_not_a_task("cancel_all");
    ready_.clear();  // every handle in it belongs to a task about to go
    while (!roots_.empty()) roots_.back().destroy();
    ready_.clear();  // and what the Waiter queued while a destructor parked
    manager_.wake(std::exchange(parked_, ParkToken{}));
}

ExecutorStats Executor::stats() const {
    ExecutorStats stats = stats_;
    stats.tasks = roots_.size();
    return stats;
}

}  // namespace fib
