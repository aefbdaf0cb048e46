// blocking.hpp — lesson 13: the clients blocked in BLPOP and BRPOP, and how a push serves them in order.
//
//   BLPOP q1 q2 5    pops the head of the first of q1, q2 that has an element;
//                    if none has, the client's fiber parks until a push to one
//                    of them serves it, or 5 s pass (a null reply), 0: for ever
//
// This is the command that shows what fibers are for. Redis's event loop
// cannot wait inside a command: it marks the client blocked, keeps a list
// of blocked clients per key, and when a key is pushed to, re-runs the work
// for them from the loop (blockForKeys, handleClientsBlockedOnKeys in
// src/blocked.c). Here the handler simply waits, in the middle of its
// command, on its own fiber, and the other clients' fibers run meanwhile.
//
// What stays the same is the order. A push does not wake the waiters to race
// for the element: once the pushing command has ended, serve() pops an
// element for each waiter in the order they blocked (FIFO per key, as Redis),
// while the list has one, and hands it over with the wake. The woken fiber
// finds its element in its Waiter; nobody can take it in between. A waiter
// blocked on several keys is served by the first key pushed, then leaves
// every queue.
//
// A waiter lives in the blocked fiber's frame. It leaves the queues when it
// is served, and otherwise when its wait ends (timeout, hang-up, cancel),
// before that frame goes; a waiter served after its wait ended (the push
// came between the timeout's wake and the fiber's run) still gets its
// element: no element is lost. A client that hangs up after it was served
// loses its element with its reply, as it would with Redis.
#pragma once

#include <cstddef>
#include <deque>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "fib/event.hpp"
#include "keyspace.hpp"

namespace kv {

// Which end of a list a command works at: LPUSH/LPOP/BLPOP the head, RPUSH/RPOP/BRPOP the tail.
enum class End { kHead, kTail };

// Removes and returns the element at `end` of a list that has one.
std::string pop_one(List& list, End end);

class BlockedLists {
public:
    struct Waiter {
        std::vector<std::string> keys;  // in the order the command named them
        End end = End::kHead;
        fib::Event served_event;        // set by serve()
        std::optional<std::pair<std::string, std::string>> served;  // the key and its element
    };

    BlockedLists() = default;
    // No waiter may be left: each lives in a fiber's frame (stops the program if one is).
    ~BlockedLists();
    BlockedLists(const BlockedLists&) = delete;
    BlockedLists& operator=(const BlockedLists&) = delete;

    // Queues `waiter` behind the others on each of its keys.
    void add(Waiter& waiter);
    // Takes a waiter that was not served off every queue.
    void remove(Waiter& waiter);

    // A push to `key` (LPUSH, RPUSH): serve() will look at it.
    void pushed(std::string_view key);
    // After a command: for each key pushed to, pops elements for its waiters
    // in order while the list has them. execute() calls it.
    void serve(Keyspace& keyspace, TimePoint now);

    std::size_t blocked_on(std::string_view key) const;
    std::size_t waiters() const { return waiters_; }

private:
    void serve_key(const std::string& key, Keyspace& keyspace, TimePoint now);

    std::unordered_map<std::string, std::deque<Waiter*>> queues_;
    std::vector<std::string> pushed_;  // keys pushed to since the last serve()
    std::size_t waiters_ = 0;
};

}  // namespace kv
