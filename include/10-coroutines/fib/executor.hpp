// executor.hpp — lesson 10: the Executor, a fiber that resumes a thread's ready coroutines.
//
//   fib::FiberManager manager;
//   fib::Waiter waiter;                       // the reactor
//   fib::Executor executor;                   // the executor
//   executor.spawn(serve(listener), "acceptor");   // a Task<void>, run on its own
//   executor.wait();                          // from a fiber: until every task has ended
//
// The runtime article builds an async runtime of three parts; ours are
//
//   executor   Executor: a ready queue of coroutine handles, and one fiber
//              that resumes them, one pass per turn
//   reactor    the Waiter, its Poller and its TimerHeap (lessons 4-6): when an
//              fd a task awaits is ready, or its deadline passes, it calls the
//              registration back (waiter.hpp, timer_heap.hpp)
//   waker      a Waker: a suspended coroutine's handle, with the task it
//              belongs to, handed to Executor::schedule()
//
// A task runs on the Executor's fiber, on that fiber's stack, from one
// co_await to the next; then its frame (on the heap) keeps its state and the
// stack is free for the next task. So tasks and fibers share one thread:
// while the Executor's fiber waits for a task to be ready, other fibers run,
// and the Waiter's fiber, which serves both, is one of them.
//
// A spawned task is a root: the Executor keeps its frame until it ends, or
// until cancel() (one), cancel_all() or ~Executor destroys it. A task's
// exception that reaches its root stops the program naming the task.
// Everything here is for the Executor's own thread; another thread wakes a
// task through an eventfd (co::Event::set, co_event.hpp), never through
// schedule().
//
// A task waits only with co_await. A fiber's wait (fib::sleep_for, io::read,
// an offload's get, a CondVar) called from a task would park the Executor's
// own fiber in the middle of the task, every other task with it, and a
// cancel_all() meanwhile would free the frame still running: the Executor
// refuses it, stopping the program with a message that names the task and the
// wait. co_await the task's form instead (co::sleep_for, co::readable,
// co::in_fiber for code that must block like a fiber).
#pragma once

#include <coroutine>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <vector>

#include "fib/condvar.hpp"
#include "fib/fiber_manager.hpp"
#include "fib/task.hpp"

namespace fib {

// What a waker keeps of a suspended coroutine, to hand it back to its
// Executor: the handle to resume, and the spawned task it belongs to (its
// name, for messages; its id, so that cancelling the task drops the handle
// from the ready queue with its frame). waker_of() takes it from the promise.
struct Waker {
    std::coroutine_handle<> coroutine;
    const char* task = "a task";
    std::uint64_t root = 0;
};
template <typename Promise>
Waker waker_of(std::coroutine_handle<Promise> coroutine) {
    return Waker{coroutine, coroutine.promise().task, coroutine.promise().root};
}

struct ExecutorStats {
    std::uint64_t spawned = 0;         // tasks given to spawn()
    std::uint64_t resumes = 0;         // handles resumed from the ready queue
    std::uint64_t fibers_started = 0;  // times the Executor's fiber was started
    std::size_t tasks = 0;             // spawned tasks not yet ended
};

class Executor {
public:
    // On the calling thread's FiberManager, which must exist.
    Executor();
    // From a fiber, not a task: destroys every task still there (cancel_all),
    // then waits for the Executor's fiber to end.
    ~Executor();
    Executor(const Executor&) = delete;
    Executor& operator=(const Executor&) = delete;

    // Runs `task` on its own, from its first line, on this Executor's fiber.
    // `name` (a string that outlives the task) names it in messages. Returns
    // an id for cancel().
    std::uint64_t spawn(Task<void> task, const char* name = "task");

    // The waker: queues the coroutine to be resumed on this Executor's fiber.
    // From this thread only (stops the program otherwise). A bare handle
    // belongs to no task the Executor knows of.
    void schedule(const Waker& waker);
    void schedule(std::coroutine_handle<> coroutine) { schedule(Waker{coroutine}); }

    // From a fiber that is not the Executor's: parks it until no task is left.
    // A cancel (lesson 6) of the waiting fiber ends the wait with fib::Cancelled;
    // the tasks go on (cancel_all() ends them).
    void wait();
    // From a fiber that is not the Executor's: destroys the task that spawn()
    // returned `id` for, as cancel_all() would, if it has not ended; true if it
    // had not.
    bool cancel(std::uint64_t id);
    // From a fiber that is not the Executor's: destroys every task, suspended
    // wherever it is, as destroying its Task would (its locals' destructors
    // run, its awaits are withdrawn); nothing queued is resumed.
    void cancel_all();

    ExecutorStats stats() const;
    // True on the Executor's fiber, that is, in one of its tasks.
    bool running_a_task() const { return self_ && manager_.running() == self_; }

private:
    struct RootPromise;
    struct RootTask;
    using Root = std::coroutine_handle<RootPromise>;
    static RootTask run_root(Task<void> task);
    void forget(RootPromise& root);  // a root ended or was destroyed

    void run();  // the Executor's fiber
    void start_if_stopped();
    void check_not_a_task(const char* operation) const;
    static void refuse_park(const FiberRecord& fiber, const WaitSite& site, void* executor);



    FiberManager& manager_;
    // The ready queue. Queuing and taking in turn, a std::deque takes a 512-byte
    // block from malloc every 32 entries queued and gives one back every 32
    // taken, both served by the thread's malloc cache.
    std::deque<Waker> ready_;
    std::vector<Root> roots_;                    // the spawned tasks not yet ended
    bool started_ = false;                       // the Executor's fiber is there
    ParkToken parked_;                           // ... and parked, waiting for a task: its wait
    FiberRecord* self_ = nullptr;                // the Executor's fiber, while it runs
    const char* resuming_ = nullptr;             // the task being resumed, while one is
    std::uint64_t next_id_ = 1;                  // the next spawned task's id
    CondVar changed_;  // notified when the last task ends and when the fiber ends
    ExecutorStats stats_;
};

}  // namespace fib
