// keyspace.hpp — lesson 13: the keys of the store, their values (strings and lists) and their expiry times.
//
// A key is any bytes, and so is a string value; a list is a deque of them.
// A key may carry an expiry time, on the steady clock in milliseconds. The
// keyspace never reads a clock: every call that may find an expired key is
// given `now`, so a test can move time by hand and a server reads its clock
// once per command, as Redis does (commandTimeSnapshot).
//
// Expired keys go two ways, as in Redis:
//   lazily   every lookup (find, erase, expiry) of an expired key deletes it
//            first and reports it missing: no command ever sees one;
//   actively expire_some(now, budget) samples keys with an expiry and
//            deletes those past it, so that keys nobody looks up again do not
//            hold memory forever. A timer calls it a few times a second.
// A key is expired once now > its expiry time (Redis's keyIsExpired): at
// the very millisecond of its expiry it still exists.
//
// size() counts the keys held, expired or not yet reclaimed included, as
// Redis's DBSIZE does.
#pragma once

#include <chrono>
#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <variant>
#include <vector>

namespace kv {

using Milliseconds = std::chrono::milliseconds;
using TimePoint = std::chrono::time_point<std::chrono::steady_clock, Milliseconds>;

// The steady clock, in whole milliseconds.
TimePoint clock_now();

// A list lives in a box of its own: a deque is 80 bytes, and in the variant
// every string value would pay for it (a key with its entry took 188 bytes;
// Redis takes about 100).
using List = std::deque<std::string>;
using Value = std::variant<std::string, std::unique_ptr<List>>;

// The list a value holds, or null when it holds a string.
inline List* list_of(Value* value) {
    auto* const box = value ? std::get_if<std::unique_ptr<List>>(value) : nullptr;
    return box ? box->get() : nullptr;
}
inline Value new_list() { return std::make_unique<List>(); }

// What one call of expire_some did.
struct ExpireCycle {
    std::size_t rounds = 0;   // sampling rounds of at most kExpireSamplesPerRound keys
    std::size_t sampled = 0;  // keys looked at, never more than the budget
    std::size_t expired = 0;  // of those, deleted
};

// Redis's active cycle (activeExpireCycle in src/expire.c) samples 20 keys
// with an expiry per round (ACTIVE_EXPIRE_CYCLE_KEYS_PER_LOOP) and repeats
// while more than 10% of a round's sample had expired
// (ACTIVE_EXPIRE_CYCLE_ACCEPTABLE_STALE, at the default effort).
constexpr std::size_t kExpireSamplesPerRound = 20;
constexpr std::size_t kExpireAcceptableStalePercent = 10;

class Keyspace {
public:
    // The value of a live key, or null (an expired key is deleted first).
    // The pointer is good until the keyspace is next changed.
    Value* find(std::string_view key, TimePoint now);

    // Sets `key` to `value`, adding the key if it is missing. Its expiry time
    // is forgotten, as SET forgets it, unless keep_expiry.
    Value& set(std::string_view key, Value value, bool keep_expiry = false);

    // Deletes a live key; false if there was none (or only an expired one).
    bool erase(std::string_view key, TimePoint now);

    // The expiry time of a live key, or nothing when it has none or is missing.
    std::optional<TimePoint> expiry(std::string_view key, TimePoint now);
    // Gives an existing key an expiry time (replacing any); false if the key is missing.
    bool set_expiry(std::string_view key, TimePoint when);
    // Makes a key persistent; true if it had an expiry time to remove.
    bool clear_expiry(std::string_view key);

    std::size_t size() const { return entries_.size(); }
    std::size_t size_with_expiry() const { return keys_with_expiry_.size(); }
    void clear();

    // Calls `visit` with each live key, in no order, and deletes nothing.
    void for_each_live_key(TimePoint now, const std::function<void(const std::string&)>& visit) const;

    // The active cycle: rounds of kExpireSamplesPerRound keys with an expiry,
    // taken in turn from where the last round stopped, each deleted if
    // expired, repeated while a round found more than
    // kExpireAcceptableStalePercent expired, and never more than `budget`
    // keys sampled in all. Redis bounds its cycle by time (25% of a
    // 100 ms tick); a count bounds it here, which a test can check.
    ExpireCycle expire_some(TimePoint now, std::size_t budget);

private:
    struct Entry {
        Value value;
        std::optional<TimePoint> expires_at;
        std::size_t expiry_slot = 0;  // where keys_with_expiry_ holds it, if it expires
    };
    // Looked up by string_view without making a std::string.
    struct KeyHash {
        using is_transparent = void;
        std::size_t operator()(std::string_view key) const { return std::hash<std::string_view>{}(key); }
    };
    using Map = std::unordered_map<std::string, Entry, KeyHash, std::equal_to<>>;
    using Node = Map::value_type;

    static bool expired(const Entry& entry, TimePoint now) { return entry.expires_at && now > *entry.expires_at; }
    Map::iterator find_live(std::string_view key, TimePoint now);
    void remove(Map::iterator entry);
    void forget_expiry(Node& node);

    Map entries_;
    // The keys that have an expiry time, for the active cycle to sample. An
    // unordered_map's elements stay where they are when it rehashes, so
    // pointers to them stay good until the key is erased.
    std::vector<Node*> keys_with_expiry_;
    std::size_t expire_cursor_ = 0;  // the next slot the active cycle samples
};

}  // namespace kv
