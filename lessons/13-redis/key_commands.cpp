// key_commands.cpp — lesson 13: commands on keys of any type, and on their expiry (Redis's src/db.c, src/expire.c).
#include <algorithm>
#include <climits>
#include <string>
#include <vector>

#include "glob.hpp"
#include "handlers.hpp"

namespace kv {
namespace {

// EXPIRE's and PEXPIRE's conditions, by parseExtendedExpireArgumentsOrReply.
struct ExpireConditions {
    bool if_none = false;     // NX: only a key with no expiry time
    bool if_any = false;      // XX: only a key with one
    bool if_greater = false;  // GT: only later than the key's (none counts as infinite)
    bool if_less = false;     // LT: only earlier than the key's
};

std::optional<ExpireConditions> expire_conditions(Call& call) {
    ExpireConditions conditions;
    for (std::size_t i = 3; i < call.arguments.size(); ++i) {
        const std::string& option = call.arguments[i];
        if (is_option(option, "NX")) conditions.if_none = true;
        else if (is_option(option, "XX")) conditions.if_any = true;
        else if (is_option(option, "GT")) conditions.if_greater = true;
        else if (is_option(option, "LT")) conditions.if_less = true;
        else {
            call.reply.error("ERR Unsupported option " + option.substr(0, option.find('\0')));
            return {};
        }
    }
    if (conditions.if_none && (conditions.if_any || conditions.if_greater || conditions.if_less)) {
        call.reply.error("ERR NX and XX, GT or LT options at the same time are not compatible");
        return {};
    }
    if (conditions.if_greater && conditions.if_less) {
        call.reply.error("ERR GT and LT options at the same time are not compatible");
        return {};
    }
    return conditions;
}

// EXPIRE and PEXPIRE, by expireGenericCommand. A time in the past (zero or
// negative included) is allowed and deletes the key; only a time that
// overflows when made milliseconds or added to now is "invalid expire time".
void expire_after(Call& call, bool in_seconds, std::string_view name) {
    const auto conditions = expire_conditions(call);
    if (!conditions) return;
    const auto amount = integer_argument(call, call.arguments[2]);
    if (!amount) return;
    long long when = *amount;
    const long long now = call.now.time_since_epoch().count();
    if ((in_seconds && (when > LLONG_MAX / 1000 || when < LLONG_MIN / 1000)) ||
        (in_seconds ? when * 1000 : when) > LLONG_MAX - now)
        return call.reply.error("ERR invalid expire time in '" + std::string(name) + "' command");
    when = (in_seconds ? when * 1000 : when) + now;
    const std::string& key = call.arguments[1];
    if (!call.keyspace.find(key, call.now)) return call.reply.integer(0);
    const auto current = call.keyspace.expiry(key, call.now);
    if ((conditions->if_none && current) || (conditions->if_any && !current) ||
        (conditions->if_greater && (!current || when <= current->time_since_epoch().count())) ||
        (conditions->if_less && current && when >= current->time_since_epoch().count()))
        return call.reply.integer(0);
    if (when <= now)
        call.keyspace.erase(key, call.now);
    else
        call.keyspace.set_expiry(key, TimePoint(Milliseconds(when)));
    call.reply.integer(1);
}

// TTL and PTTL, by ttlGenericCommand: -2 for a missing key, -1 for one with
// no expiry time; seconds are rounded to the nearest.
void time_to_live(Call& call, bool in_seconds) {
    const std::string& key = call.arguments[1];
    if (!call.keyspace.find(key, call.now)) return call.reply.integer(-2);
    const auto expires_at = call.keyspace.expiry(key, call.now);
    if (!expires_at) return call.reply.integer(-1);
    const long long left = std::max<long long>((*expires_at - call.now).count(), 0);
    call.reply.integer(in_seconds ? (left + 500) / 1000 : left);
}

}  // namespace

void del_command(Call& call) {
    long long deleted = 0;
    for (std::size_t i = 1; i < call.arguments.size(); ++i) deleted += call.keyspace.erase(call.arguments[i], call.now);
    call.reply.integer(deleted);
}

// A key named twice counts twice, as in Redis.
void exists_command(Call& call) {
    long long found = 0;
    for (std::size_t i = 1; i < call.arguments.size(); ++i) found += call.keyspace.find(call.arguments[i], call.now) != nullptr;
    call.reply.integer(found);
}

void expire_command(Call& call) { expire_after(call, true, "expire"); }

void pexpire_command(Call& call) { expire_after(call, false, "pexpire"); }

void ttl_command(Call& call) { time_to_live(call, true); }

void pttl_command(Call& call) { time_to_live(call, false); }

void persist_command(Call& call) {
    const std::string& key = call.arguments[1];
    call.reply.integer(call.keyspace.find(key, call.now) && call.keyspace.clear_expiry(key));
}

// TYPE key: +string, +list, or +none for a missing key (tools such as
// redis-cli --bigkeys ask it of every key).
void type_command(Call& call) {
    Value* const value = call.keyspace.find(call.arguments[1], call.now);
    call.reply.simple(!value ? "none" : list_of(value) ? "list" : "string");
}

void dbsize_command(Call& call) { call.reply.integer(static_cast<long long>(call.keyspace.size())); }

// FLUSHALL [SYNC | ASYNC]: both flush at once here.
void flushall_command(Call& call) {
    if (call.arguments.size() > 2 || (call.arguments.size() == 2 && !is_option(call.arguments[1], "SYNC") &&
                                      !is_option(call.arguments[1], "ASYNC")))
        return call.reply.error(kSyntaxError);
    call.keyspace.clear();
    call.reply.ok();
}

// "*" lists every key without matching, as keysCommand does: the matcher
// itself does not match "*" with an empty key.
void keys_command(Call& call) {
    const std::string& pattern = call.arguments[1];
    std::vector<std::string> keys;
    call.keyspace.for_each_live_key(call.now, [&](const std::string& key) {
        if (pattern == "*" || glob_match(pattern, key)) keys.push_back(key);
    });
    call.reply.array(keys.size());
    for (const std::string& key : keys) call.reply.bulk(key);
}

}  // namespace kv
