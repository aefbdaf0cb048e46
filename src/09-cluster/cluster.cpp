// cluster.cpp — lesson 9: starting, stopping and joining the threads of a Cluster.
#include "fib/cluster.hpp"

#include "fib/fatal.hpp"
#include "fib/shard.hpp"

namespace fib {

Cluster::Cluster(const ClusterOptions& options) : backend_(options.backend) {
    std::size_t threads = options.threads ? options.threads : std::thread::hardware_concurrency();
    if (threads == 0) threads = 1;
    for (std::size_t i = 0; i < threads; ++i)
        shards_.push_back(std::make_unique<Shard>(*this, i, options.post_capacity));
}

Cluster::~Cluster() {
    if (threads_.empty()) return;
    stop();
    for (std::thread& thread : threads_)
        if (thread.joinable()) thread.join();
}

void Cluster::start(std::function<void(std::size_t)> main) {
    if (!threads_.empty()) fatal("Cluster::start() was called twice");
    // Kept with the cluster, not in this frame: a thread may still be on its way out of
    // arrive_and_wait() when this one returns.
    ready_ = std::make_unique<std::latch>(static_cast<std::ptrdiff_t>(shards_.size()) + 1);
    mains_returned_ = std::make_unique<std::latch>(static_cast<std::ptrdiff_t>(shards_.size()));
    for (std::unique_ptr<Shard>& shard : shards_)
        threads_.emplace_back([&shard = *shard, main, backend = backend_, &ready = *ready_, &returned = *mains_returned_] {
            shard.run(main, backend, ready, returned);
        });
    ready_->arrive_and_wait();
}

void Cluster::run(std::function<void(std::size_t)> main) {
    start(std::move(main));
    mains_returned_->wait();
    stop();
    join();
}

void Cluster::stop() {
    for (std::unique_ptr<Shard>& shard : shards_) shard->request_stop();
}

void Cluster::join() {
    for (std::thread& thread : threads_)
        if (thread.joinable()) thread.join();
    for (std::unique_ptr<Shard>& shard : shards_)
        if (shard->error) std::rethrow_exception(shard->error);
}

Shard& Cluster::shard(std::size_t index) {
    if (index >= shards_.size())
        fatal("post to thread %zu of a Cluster of %zu threads", index, shards_.size());
    return *shards_[index];
}

std::size_t Cluster::this_thread_index() {
    return detail::shard_of_this_thread("Cluster::this_thread_index()").index;
}

}  // namespace fib
