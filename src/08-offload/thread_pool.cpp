// thread_pool.cpp — lesson 8: the workers' loop, submit, and a pool that stops cleanly.
#include "fib/thread_pool.hpp"

#include "fib/fatal.hpp"

namespace fib {

namespace {
thread_local ThreadPool* worker_of = nullptr;  // set on each worker thread, for good
}

ThreadPool::ThreadPool(std::size_t threads) {
    if (threads == 0) threads = 1;
    workers_.reserve(threads);
    for (std::size_t i = 0; i < threads; ++i) workers_.emplace_back([this] { work(); });
}

// The workers drain the queue before they stop: every job submitted gets run,
// so every fiber awaiting one gets its result.
ThreadPool::~ThreadPool() {
    {
        const std::lock_guard<std::mutex> lock(mutex_);
        stopping_ = true;
    }
    has_work_.notify_all();
    for (std::thread& worker : workers_) worker.join();
}

ThreadPool* ThreadPool::of_this_thread() { return worker_of; }

void ThreadPool::submit(std::unique_ptr<Job> job) {
    {
        const std::lock_guard<std::mutex> lock(mutex_);
        if (stopping_) fatal("a job was submitted to a ThreadPool that is being destroyed");
        jobs_.push_back(std::move(job));
    }
    has_work_.notify_one();  // after the unlock: the woken worker finds the mutex free
}

// Sleep until there is a job or the pool stops; run jobs outside the lock.
void ThreadPool::work() {
    worker_of = this;
    for (;;) {
        std::unique_ptr<Job> job;
        {
            std::unique_lock<std::mutex> lock(mutex_);
            has_work_.wait(lock, [this] { return stopping_ || !jobs_.empty(); });
            if (jobs_.empty()) return;  // stopping, and nothing left to run
            job = std::move(jobs_.front());
            jobs_.pop_front();
        }
        job->run();
    }
}

}  // namespace fib
