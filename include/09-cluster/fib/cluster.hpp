// cluster.hpp — lesson 9: Cluster, one FiberManager per thread, and messages between them.
//
//   fib::Cluster cluster({.threads = 4});                  // default: one per CPU
//   cluster.start([&](std::size_t index) { serve(index); });   // on each thread, as its main
//   cluster.post(2, [] { log("on thread 2"); });           // a new fiber on thread 2
//   cluster.stop();                                        // from any thread: cancel them all
//   cluster.join();                                        // every thread has ended
//   cluster.run(main);           // or all in one: start, stop once every main has returned, join
//
// Each thread has its own FiberManager and Waiter, and its fibers stay on it
// for their whole life. A fiber cannot move: its stack, its TLS block (lesson
// 7), the thread_locals it sees and the fds it has registered with the Waiter
// all belong to one thread. The ready queue, the wait lists and the records
// are touched without locks because only their own thread touches them. The
// fiber server that this course started from tried to run one manager on
// several threads and never got it to work; the way that works, Lwan's and
// Seastar's, is this one: share nothing between threads but messages.
//
// Threads talk through each thread's inbox: post() puts a callable in it,
// and the thread's dispatcher fiber runs each as a new fiber there. The inbox
// is lesson 8's Inbox: a mutex around a queue, and the thread's Event (lesson
// 6) set only when the inbox was empty, so a burst of posts costs one eventfd
// write; the dispatcher waits on the Event only after it found the inbox
// empty, so no post is missed. An idle thread sleeps in epoll_wait. Posts are
// bounded (Slots): at most `post_capacity` posted callables queued or running
// on a thread, and a fiber that posts to a full thread parks until one ends.
//
// stop() cancels (lesson 6) each thread's main and every posted fiber still
// running (and, through join, what they join); what is posted after runs
// cancelled, and once a thread has ended, post() returns false. A thread ends
// when stop() was called, its main has returned, its posted fibers have
// ended, and none of its fibers waits for room anywhere (in a post's Slots or
// a Mailbox's): that wait's wake comes home to this thread's inbox, so the
// thread stays for it. Other fibers of its own (spawned and detached, say)
// are its manager's to wait for, as on any thread.
#pragma once

#include <cstddef>
#include <exception>
#include <functional>
#include <latch>
#include <memory>
#include <thread>
#include <utility>
#include <vector>

#include "fib/slots.hpp"

namespace fib {

struct ClusterOptions {
    std::size_t threads = 0;             // 0: std::thread::hardware_concurrency()
    std::size_t post_capacity = 1024;    // posted callables queued or running, per thread
    const char* backend = nullptr;       // each thread's Waiter: "epoll", "poll", or the default
};

namespace detail {
// A posted callable. It runs in a detached fiber: an exception that escapes
// it stops the program with a message naming the fiber (lesson 2).
struct Posted {
    virtual ~Posted() = default;
    virtual void run() = 0;
};
template <typename F>
struct PostedCall final : Posted {
    explicit PostedCall(F&& f) : function(std::move(f)) {}
    void run() override { function(); }
    F function;
};
// shard.cpp: queue `call` on `shard`; with `wait`, park while the shard is full.
bool post_job(Shard& shard, std::unique_ptr<Posted> call, bool wait);
}  // namespace detail

class Cluster {
public:
    explicit Cluster(const ClusterOptions& options = {});
    ~Cluster();  // stop() and join(), if the threads were started
    Cluster(const Cluster&) = delete;
    Cluster& operator=(const Cluster&) = delete;

    std::size_t size() const { return shards_.size(); }

    // Starts the threads, and returns once each has its manager and its inbox
    // open. On each, `main(index)` then runs on the thread's first fiber (a
    // post from it finds every thread ready); the thread goes on serving posts
    // after it returns, until stop(). A post before start() returns false.
    void start(std::function<void(std::size_t index)> main);
    // From any thread, a signal handler excepted; again is harmless.
    void stop();
    // Waits for every thread to end; rethrows the first exception a main threw.
    void join();
    // start(main), then stop() once every thread's main has returned, then join().
    void run(std::function<void(std::size_t index)> main);

    // Runs `function()` as a new fiber on thread `index`. From a fiber of one of
    // this cluster's threads: parks while that thread is full. False if the
    // thread has ended, or if the calling fiber was cancelled while it waited.
    template <typename F>
    bool post(std::size_t index, F function) {
        return detail::post_job(shard(index), std::make_unique<detail::PostedCall<F>>(std::move(function)), true);
    }
    // From any thread: false at once if thread `index` is full or has ended.
    template <typename F>
    bool try_post(std::size_t index, F function) {
        return detail::post_job(shard(index), std::make_unique<detail::PostedCall<F>>(std::move(function)), false);
    }

    // The index of the calling thread in its cluster; stops the program with a
    // message on a thread that is in no cluster.
    static std::size_t this_thread_index();

private:
    Shard& shard(std::size_t index);

    std::vector<std::unique_ptr<Shard>> shards_;
    std::vector<std::thread> threads_;
    std::unique_ptr<std::latch> ready_;           // every thread set up, its inbox open
    std::unique_ptr<std::latch> mains_returned_;
    const char* backend_;
};

}  // namespace fib
