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

namespace fib {
class ThreadPool;
}

namespace kv {

struct Store {
    Keyspace keyspace;
    BlockedLists blocked;  // BLPOP's and BRPOP's clients, by key
    Channels channels;     // SUBSCRIBE's clients, by channel
    // SAVE writes the keys to `snapshot_path` (snapshot.hpp) on a worker of
    // `pool`, while this thread goes on serving; without a pool, on this thread.
    std::string snapshot_path = "kv_snapshot.resp";
    fib::ThreadPool* pool = nullptr;
};

}  // namespace kv
