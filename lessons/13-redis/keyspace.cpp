// keyspace.cpp — lesson 13: a hash map of keys, with lazy and sampled active expiry as Redis has them.
#include "keyspace.hpp"

#include <algorithm>
#include <utility>

namespace kv {

TimePoint clock_now() { return std::chrono::floor<Milliseconds>(std::chrono::steady_clock::now()); }

// Every lookup goes through here: an expired key is deleted on sight.
Keyspace::Map::iterator Keyspace::find_live(std::string_view key, TimePoint now) {
    const auto entry = entries_.find(key);
    if (entry == entries_.end() || !expired(entry->second, now)) return entry;
    remove(entry);
    return entries_.end();
}

Value* Keyspace::find(std::string_view key, TimePoint now) {
    const auto entry = find_live(key, now);
    return entry == entries_.end() ? nullptr : &entry->second.value;
}

Value& Keyspace::set(std::string_view key, Value value, bool keep_expiry) {
    auto entry = entries_.find(key);
    if (entry == entries_.end()) entry = entries_.try_emplace(std::string(key)).first;
    if (!keep_expiry) forget_expiry(*entry);
    entry->second.value = std::move(value);
    return entry->second.value;
}

bool Keyspace::erase(std::string_view key, TimePoint now) {
    const auto entry = find_live(key, now);
    if (entry == entries_.end()) return false;
    remove(entry);
    return true;
}

std::optional<TimePoint> Keyspace::expiry(std::string_view key, TimePoint now) {
    const auto entry = find_live(key, now);
    if (entry == entries_.end()) return {};
    return entry->second.expires_at;
}

bool Keyspace::set_expiry(std::string_view key, TimePoint when) {
    const auto entry = entries_.find(key);
    if (entry == entries_.end()) return false;
    if (!entry->second.expires_at) {
        entry->second.expiry_slot = keys_with_expiry_.size();
        keys_with_expiry_.push_back(&*entry);
    }
    entry->second.expires_at = when;
    return true;
}

bool Keyspace::clear_expiry(std::string_view key) {
    const auto entry = entries_.find(key);
    if (entry == entries_.end() || !entry->second.expires_at) return false;
    forget_expiry(*entry);
    return true;
}

// The slot is filled by the last key with an expiry, so removal is O(1).
void Keyspace::forget_expiry(Node& node) {
    Entry& entry = node.second;
    if (!entry.expires_at) return;
    Node* const last = keys_with_expiry_.back();
    keys_with_expiry_[entry.expiry_slot] = last;
    last->second.expiry_slot = entry.expiry_slot;
    keys_with_expiry_.pop_back();
    entry.expires_at.reset();
}

void Keyspace::remove(Map::iterator entry) {
    forget_expiry(*entry);
    entries_.erase(entry);
}

void Keyspace::clear() {
    entries_.clear();
    keys_with_expiry_.clear();
    expire_cursor_ = 0;
}

void Keyspace::for_each_live_key(TimePoint now, const std::function<void(const std::string&)>& visit) const {
    for (const auto& [key, entry] : entries_)
        if (!expired(entry, now)) visit(key);
}

// A round takes the keys at the cursor and after it, wrapping to the
// start. A key deleted leaves its slot to the last key, which the cursor
// then looks at without moving; a key kept moves the cursor on. Redis walks
// its table of expiring keys with a scan cursor the same way, so the
// rounds of successive cycles cover every key in turn.
ExpireCycle Keyspace::expire_some(TimePoint now, std::size_t budget) {
    ExpireCycle cycle;
    while (!keys_with_expiry_.empty() && cycle.sampled < budget) {
        ++cycle.rounds;
        std::size_t round_sampled = 0;
        std::size_t round_expired = 0;
        const std::size_t round_size = std::min({kExpireSamplesPerRound, keys_with_expiry_.size(), budget - cycle.sampled});
        while (round_sampled < round_size && !keys_with_expiry_.empty()) {
            if (expire_cursor_ >= keys_with_expiry_.size()) expire_cursor_ = 0;
            Node* const node = keys_with_expiry_[expire_cursor_];
            ++round_sampled;
            if (expired(node->second, now)) {
                ++round_expired;
                remove(entries_.find(node->first));
            } else {
                ++expire_cursor_;
            }
        }
        cycle.sampled += round_sampled;
        cycle.expired += round_expired;
        if (round_expired * 100 / round_sampled <= kExpireAcceptableStalePercent) break;
    }
    return cycle;
}

}  // namespace kv
