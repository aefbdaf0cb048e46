// kv_server.cpp — lesson 13: the server's scope: the clients, the expiry fiber, and how each client ended.
#include "kv_server.hpp"

#include <chrono>
#include <cstdio>
#include <utility>

#include "fib/fiber_manager.hpp"
#include "fib/timer.hpp"

KvServer::KvServer(const KvOptions& options, kv::Store& store)
    : ScopedServer("kv_server", options.bind, options.port), options_(options), store_(store) {
    use_store();
}

KvServer::KvServer(const KvOptions& options, kv::Store& store, fib::UniqueFd listener)
    : ScopedServer("kv_server", std::move(listener)), options_(options), store_(store) {
    use_store();
}

KvServer::~KvServer() { store_.pool = nullptr; }

void KvServer::use_store() {
    store_.snapshot_path = options_.snapshot_path;
    store_.pool = &save_pool_;
}

// The expiry fiber is a sibling of the whole client server: one cancel
// (the end of the client server) ends both.
void KvServer::serve(int stop_fd) {
    fib::scope({.name = "kv_server"}, [&](fib::Scope& server) {
        server.spawn({.name = "active expiry"}, [this] { expire_keys(); });
        ScopedServer::serve(stop_fd);
        server.cancel();
    });
}

void KvServer::expire_keys() {
    while (fib::sleep_for(std::chrono::milliseconds(100)))
        store_.keyspace.expire_some(kv::clock_now(), options_.expire_budget);
}

void KvServer::serve_client(int socket) {
    KvConnection client(socket, store_, options_.limits, read_buffer_, ++next_id_);
    count(client.run());
}

void KvServer::count(ClientEnd end) {
    const char* why = nullptr;
    switch (end) {
        case ClientEnd::kQuit: counts_.quit.fetch_add(1, std::memory_order_relaxed); return;
        case ClientEnd::kProtocolError: counts_.protocol_errors.fetch_add(1, std::memory_order_relaxed); return;
        case ClientEnd::kIdle: counts_.idle.fetch_add(1, std::memory_order_relaxed); why = "idle"; break;
        case ClientEnd::kSlowReader: counts_.slow_readers.fetch_add(1, std::memory_order_relaxed); why = "not reading"; break;
        case ClientEnd::kOverLimit: counts_.over_limit.fetch_add(1, std::memory_order_relaxed); why = "output over its limit"; break;
        default: return;
    }
    if (!options_.quiet) std::fprintf(stderr, "kv_server: %s: closed: %s\n", fib::this_fiber::name(), why);
}
