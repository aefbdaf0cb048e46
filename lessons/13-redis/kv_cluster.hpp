// kv_cluster.hpp — lesson 13: the per-core variant: keys sharded over threads, a command for another thread's keys forwarded to it.
//
//   KvCluster cluster(options, 2);   // listens on options.port from every thread
//   cluster.start();                 // the threads serve
//   ...
//   cluster.stop();                  // from a thread of its own: every client closed
//   (kv_server --threads 2)
//
// Lesson 9's shape: a Cluster of threads, each with its own FiberManager,
// Waiter and listener on the same port (SO_REUSEPORT), and here each with
// its own Store: the keys whose hash falls to it. A client is served by the
// thread that accepted it; each of its commands goes through execute(), which
// asks this thread's ShardRouter (store.hpp's Router) first:
//
//   keys on this thread        run here, as on one thread, after a hash of
//                              each key (key_positions, thread_of)
//   keys on one other thread   the command is posted to that thread's inbox
//                              (Cluster::post: a fiber there runs it on its
//                              store), and the client's fiber waits for the
//                              reply bytes on an Event, which the other thread
//                              sets: two trips through the kernel's eventfd
//   keys on several threads    refused, as Redis Cluster refuses them:
//                              -CROSSSLOT; a {tag} in the keys puts them
//                              together on purpose (thread_of)
//   KEYS, DBSIZE, FLUSHALL,    run on every thread at once, the replies
//   PUBLISH, SAVE              merged (counts summed, arrays joined)
//
// Nothing is shared but the messages: a store is touched only by its own
// thread. What the forwarding costs is measured in make bench-redis.
//
// Left out: a client blocked in a forwarded BLPOP that hangs up is noticed
// only by its own thread, not by the thread where it waits; that waiter
// stays until its timeout or a push serves it (the element then goes to a
// client that has gone). And SAVE writes one file per thread (FILE.N), which
// the variant does not load at start.
#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "commands.hpp"
#include "fib/cluster.hpp"
#include "fib/event.hpp"
#include "kv_server.hpp"
#include "store.hpp"

// Which of `threads` threads holds `key`: by its hash, or by the hash of its
// {tag} (the bytes between its first '{' and the next '}', if any), as Redis
// Cluster picks a slot, so that {user1}:name and {user1}:mail are together.
std::size_t thread_of(std::string_view key, std::size_t threads);

class ShardRouter final : public kv::Router {
public:
    // `stores`: every thread's store, by thread index, each alive until the
    // cluster has ended. `self`: this thread's index. Made and used on its thread.
    ShardRouter(fib::Cluster& cluster, std::span<kv::Store* const> stores, std::size_t self);

    bool route(const kv::CommandSpec& spec, const resp::Command& command, kv::Session& session,
               std::string& out) override;

    std::size_t forwarded() const { return forwarded_; }

private:
    struct Forwarded;
    void start(Forwarded& job, std::size_t thread);
    void finish(Forwarded& job);
    void run_everywhere(const resp::Command& command, std::string& out);

    fib::Cluster& cluster_;
    std::span<kv::Store* const> stores_;
    std::size_t self_;
    std::vector<std::unique_ptr<fib::Event>> spare_events_;  // one per forward under way, reused
    std::size_t forwarded_ = 0;
};

// The variant as a whole: the stores, the listeners, the cluster's threads,
// each serving a KvServer on its store with its ShardRouter. The stores
// outlive the threads: a thread's store is reached by the others' forwarded
// commands until every thread has ended.
class KvCluster {
public:
    // Listens on every thread's socket at once (SO_REUSEPORT); throws
    // std::system_error if the port cannot be had. SAVE's file is
    // options.snapshot_path + ".N" on thread N.
    KvCluster(const KvOptions& options, std::size_t threads, const char* backend = nullptr);
    ~KvCluster();  // stop()

    void start();
    // From a thread that is none of the cluster's: cancels every thread's
    // server, which closes its clients, and waits for the threads to end.
    void stop();

    std::uint16_t port() const { return port_; }
    // The clients blocked in BLPOP or BRPOP on every thread's keys (as
    // Redis's INFO says blocked_clients). From a thread that is none of the
    // cluster's: it asks each thread, and waits for the answers.
    std::size_t blocked_clients();
    std::size_t threads() const { return stores_.size(); }
    // Once stopped: thread `index`'s store, and the connections it served.
    const kv::Store& store(std::size_t index) const { return *owned_[index]; }
    unsigned long long served(std::size_t index) const { return served_[index]; }

private:
    void serve(std::size_t index);

    KvOptions options_;
    std::vector<std::unique_ptr<kv::Store>> owned_;
    std::vector<kv::Store*> stores_;
    std::vector<fib::UniqueFd> listeners_;
    std::vector<unsigned long long> served_;
    std::uint16_t port_ = 0;
    bool stopped_ = false;
    fib::Cluster cluster_;
};
