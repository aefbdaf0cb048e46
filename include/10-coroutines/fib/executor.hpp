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
//   waker      a std::coroutine_handle<> handed to Executor::schedule()
//
// A task runs on the Executor's fiber, on that fiber's stack, from one
// co_await to the next; then its frame (on the heap) keeps its state and the
// stack is free for the next task. So tasks and fibers share one thread:
// while the Executor's fiber waits for a task to be ready, other fibers run,
// and the Waiter's fiber, which serves both, is one of them.
//
// A spawned task is a root: the Executor keeps its frame until it ends, or
// until cancel_all() (or ~Executor) destroys it. A task's exception that
// reaches its root stops the program naming the task. Everything here is for
// the Executor's own thread; another thread wakes a task through an eventfd
// (co::Event::set, co_event.hpp), never through schedule().
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
    // `name` (a string that outlives the task) names it in messages.
    void spawn(Task<void> task, const char* name = "task");

    // The waker: queues `coroutine` to be resumed on this Executor's fiber.
    // From this thread only (stops the program otherwise).
    void schedule(std::coroutine_handle<> coroutine);

    // From a fiber that is not the Executor's: parks it until no task is left.
    void wait();
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

    FiberManager& manager_;
    // The ready queue. Queuing and taking in turn, a std::deque takes a 512-byte
    // block from malloc every 64 handles queued and gives one back every 64
    // taken, both served by the thread's malloc cache.
    std::deque<std::coroutine_handle<>> ready_;
    std::vector<Root> roots_;                    // the spawned tasks not yet ended
    bool started_ = false;                       // the Executor's fiber is there
    ParkToken parked_;                           // ... and parked, waiting for a task: its wait
    FiberRecord* self_ = nullptr;                // the Executor's fiber, while it runs
    CondVar changed_;  // notified when the last task ends and when the fiber ends
    ExecutorStats stats_;
};

}  // namespace fib
