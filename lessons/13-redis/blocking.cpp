// blocking.cpp — lesson 13: the queues of blocked clients per key, served in order after each push.
#include "blocking.hpp"

#include <algorithm>
#include <variant>

#include "fib/fatal.hpp"

namespace kv {

std::string pop_one(List& list, End end) {
    std::string element = std::move(end == End::kHead ? list.front() : list.back());
    end == End::kHead ? list.pop_front() : list.pop_back();
    return element;
}

BlockedLists::~BlockedLists() {
    if (waiters_ != 0) fib::fatal("kv::BlockedLists destroyed with %zu clients blocked on it", waiters_);
}

void BlockedLists::add(Waiter& waiter) {
    for (const std::string& key : waiter.keys) queues_[key].push_back(&waiter);
    ++waiters_;
}

void BlockedLists::remove(Waiter& waiter) {
    for (const std::string& key : waiter.keys) {
        const auto queue = queues_.find(key);
        if (queue == queues_.end()) continue;
        std::erase(queue->second, &waiter);
        if (queue->second.empty()) queues_.erase(queue);
    }
    --waiters_;
}

void BlockedLists::pushed(std::string_view key) {
    if (queues_.contains(std::string(key))) pushed_.emplace_back(key);
}

void BlockedLists::serve(Keyspace& keyspace, TimePoint now) {
    // A key served may be pushed to again by nobody in between: one pass does.
    std::vector<std::string> keys;
    keys.swap(pushed_);
    for (const std::string& key : keys) serve_key(key, keyspace, now);
}

// The waiter at the front of the key's queue gets the element at its end;
// it leaves every queue (it may wait on other keys too), and its fiber is
// woken with the element already in hand.
void BlockedLists::serve_key(const std::string& key, Keyspace& keyspace, TimePoint now) {
    for (;;) {
        const auto queue = queues_.find(key);
        if (queue == queues_.end()) return;
        Value* const value = keyspace.find(key, now);
        List* const list = list_of(value);
        if (!list) return;
        Waiter& waiter = *queue->second.front();
        waiter.served.emplace(key, pop_one(*list, waiter.end));
        if (list->empty()) keyspace.erase(key, now);
        remove(waiter);
        waiter.served_event.set();
    }
}

std::size_t BlockedLists::blocked_on(std::string_view key) const {
    const auto queue = queues_.find(std::string(key));
    return queue == queues_.end() ? 0 : queue->second.size();
}

}  // namespace kv
