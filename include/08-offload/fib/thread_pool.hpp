// thread_pool.hpp — lesson 8: a fixed set of worker threads that run jobs from one queue.
//
//   fib::ThreadPool pool(4);              // four workers, asleep until there is work
//   pool.submit(std::move(job));          // from any thread: one of them runs job->run()
//
// The workers sleep on a condition variable while the queue is empty: an idle
// pool costs no CPU, and a job wakes one worker, never all of them. There is
// no spinning anywhere: a worker that finds no job goes back to sleep in the
// kernel (futex), and a submit that finds sleeping workers wakes one.
//
// The pool knows nothing of fibers. Lesson 8's offload (offload.hpp) hands it
// jobs that, once run, post their result back to the fiber's own thread.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace fib {

// One piece of work. run() is called once, on a worker; it must not throw
// (offload's jobs catch what the callable throws and carry it home).
struct Job {
    virtual ~Job() = default;
    virtual void run() noexcept = 0;
};

class ThreadPool {
public:
    // Starts `threads` workers (at least one).
    explicit ThreadPool(std::size_t threads);
    // Runs every job already submitted, then stops and joins the workers.
    ~ThreadPool();
    ThreadPool(const ThreadPool&) = delete;
    ThreadPool& operator=(const ThreadPool&) = delete;

    // Queues the job; any thread may submit, a worker included. A submit after
    // the destructor has begun stops the program: the job would never run.
    void submit(std::unique_ptr<Job> job);

    std::size_t size() const { return workers_.size(); }
    // The pool whose worker the calling thread is, or nullptr.
    static ThreadPool* of_this_thread();

private:
    void work();

    std::mutex mutex_;
    std::condition_variable has_work_;  // workers sleep here while jobs_ is empty
    std::deque<std::unique_ptr<Job>> jobs_;
    bool stopping_ = false;
    std::vector<std::thread> workers_;
};

}  // namespace fib
