// kv_cluster.hpp — lesson 13: the per-core variant: keys sharded over threads, a command for another thread's keys forwarded to it.
//
//   kv_server --threads 2
//
// Lesson 9's shape: a Cluster of threads, each with its own FiberManager,
// Waiter and listener on the same port (SO_REUSEPORT), and here each with
// its own Store: the keys whose hash falls to it. A client is served by the
// thread that accepted it; each of its commands goes through execute(), which
// asks this thread's ShardRouter (store.hpp's Router) first:
//
//   keys on this thread        run here, as on one thread: no cost added
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
