// kv_server.hpp — lesson 13: the Redis-compatible server on one thread: a scope of clients, the expiry timer, SAVE's worker.
//
//   kv::Store store;
//   KvServer server({.port = 6380}, store);
//   server.serve(stop_fd);          // from a fiber; until stop_fd turns readable
//
// Lesson 12's ScopedServer does the accepting and the stop: every client is
// a child fiber of the server's scope, and each client is a scope of its
// own (kv_connection.hpp). Beside them run:
//
//   the active expiry    a fiber that wakes ten times a second (Redis's hz
//                        10) and samples keys with an expiry, deleting those
//                        past it (Keyspace::expire_some), so that keys nobody
//                        reads again do not hold memory for ever
//   SAVE's worker        a ThreadPool of one thread (lesson 8) that writes
//                        snapshots while this thread serves
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>

#include "../04-echo-server/echo_connection.hpp"
#include "../12-structured-concurrency/scoped_server.hpp"
#include "fib/thread_pool.hpp"
#include "kv_connection.hpp"
#include "store.hpp"

struct KvOptions {
    const char* bind = "127.0.0.1";
    std::uint16_t port = 6380;        // Redis's port plus one; 0: any free port, see port()
    bool quiet = false;               // no log of clients dropped for a limit
    KvLimits limits;
    std::string snapshot_path = "kv_snapshot.resp";  // SAVE's file
    std::size_t expire_budget = 200;  // keys the active cycle samples per tick, at most
};

// How many clients ended each way, readable from any thread.
struct KvCounts {
    std::atomic<std::uint64_t> quit{0}, protocol_errors{0}, idle{0}, slow_readers{0}, over_limit{0};
};

class KvServer : public ScopedServer {
public:
    // Binds and listens at once; throws std::system_error if it cannot. The
    // store is the caller's: in the per-core variant other threads reach it
    // until every thread has ended (kv_cluster.hpp).
    KvServer(const KvOptions& options, kv::Store& store);
    // On a listener of its own thread (the per-core variant).
    KvServer(const KvOptions& options, kv::Store& store, fib::UniqueFd listener);
    ~KvServer() override;  // the store forgets the pool

    // From a fiber of a thread with a FiberManager and a Waiter: serves until
    // `stop_fd` turns readable or the calling fiber is cancelled.
    void serve(int stop_fd);

    kv::Store& store() { return store_; }
    const KvCounts& counts() const { return counts_; }

protected:
    void serve_client(int socket) override;

private:
    void use_store();
    void expire_keys();
    void count(ClientEnd end);

    KvOptions options_;
    fib::ThreadPool save_pool_{1};
    kv::Store& store_;
    SharedReadBuffer read_buffer_;  // every client reads here: one thread
    long long next_id_ = 0;
    KvCounts counts_;
};
