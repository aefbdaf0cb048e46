// store.hpp — lesson 13: what the clients of one server thread share: the keys, the blocked clients, the channels.
//
// Every command reaches the store through its Call. One thread serves all of
// a store's clients, so nothing here has a lock: a command runs from start
// to end without another client's command in between, unless it parks (a
// BLPOP that blocks, a SAVE), and those hold no reference into the keyspace
// across the park.
#pragma once

#include <string>

#include "blocking.hpp"
#include "keyspace.hpp"
#include "pubsub.hpp"
#include "resp.hpp"

namespace fib {
class ThreadPool;
}

namespace kv {

struct CommandSpec;
class Session;

// The per-core variant's hook (kv_cluster.hpp): each thread has a store of
// its own keys, and execute() asks the router about every command before
// it runs it here. The router runs it on the thread that holds its keys,
// or on every thread, appends the reply and returns true; or returns false:
// the keys are this thread's. One server thread has no router.
class Router {
public:
    virtual ~Router() = default;
    virtual bool route(const CommandSpec& spec, const resp::Command& command, Session& session, std::string& out) = 0;
};

struct Store {
    Keyspace keyspace;
    BlockedLists blocked;  // BLPOP's and BRPOP's clients, by key
    Channels channels;     // SUBSCRIBE's clients, by channel
    // SAVE writes the keys to `snapshot_path` (snapshot.hpp) on a worker of
    // `pool`, while this thread goes on serving; without a pool, on this thread.
    std::string snapshot_path = "kv_snapshot.resp";
    fib::ThreadPool* pool = nullptr;
    Router* router = nullptr;
};

}  // namespace kv
