// string_commands.cpp — lesson 13: GET, SET, INCR and its kin, MGET and MSET (Redis's src/t_string.c).
#include <climits>
#include <string>
#include <variant>

#include "handlers.hpp"

namespace kv {
namespace {

std::string* string_of(Value* value) { return value ? std::get_if<std::string>(value) : nullptr; }

// SET's options, as parseExtendedStringArgumentsOrReply reads them: NX and
// XX exclude each other, KEEPTTL excludes EX and PX, EX and PX exclude each
// other (a repeated one is taken, its last value kept); anything else, or an
// EX or PX with no value after it, is a syntax error.
struct SetOptions {
    bool if_missing = false;  // NX
    bool if_present = false;  // XX
    bool get = false;         // GET: reply the old value
    bool keep_ttl = false;    // KEEPTTL
    bool in_seconds = false;  // EX (else PX)
    std::optional<std::string_view> expire;
};

std::optional<SetOptions> set_options(const resp::Command& arguments) {
    SetOptions options;
    for (std::size_t i = 3; i < arguments.size(); ++i) {
        const std::string_view option = arguments[i];
        const bool has_value = i + 1 < arguments.size();
        if (is_option(option, "NX") && !options.if_present) {
            options.if_missing = true;
        } else if (is_option(option, "XX") && !options.if_missing) {
            options.if_present = true;
        } else if (is_option(option, "GET")) {
            options.get = true;
        } else if (is_option(option, "KEEPTTL") && !options.expire) {
            options.keep_ttl = true;
        } else if ((is_option(option, "EX") || is_option(option, "PX")) && !options.keep_ttl && has_value &&
                   (!options.expire || options.in_seconds == is_option(option, "EX"))) {
            options.in_seconds = is_option(option, "EX");
            options.expire = arguments[++i];
        } else {
            return {};
        }
    }
    return options;
}

// The expiry time of SET's EX or PX, by getExpireMillisecondsOrReply: not
// above 0, a number of seconds whose milliseconds overflow, or a time past
// the clock's range is "invalid expire time".
std::optional<TimePoint> set_expiry_time(Call& call, const SetOptions& options) {
    const auto amount = integer_argument(call, *options.expire);
    if (!amount) return {};
    long long milliseconds = *amount;
    const long long now = call.now.time_since_epoch().count();
    if (milliseconds <= 0 || (options.in_seconds && milliseconds > LLONG_MAX / 1000) ||
        (options.in_seconds ? milliseconds * 1000 : milliseconds) > LLONG_MAX - now) {
        call.reply.error("ERR invalid expire time in 'set' command");
        return {};
    }
    if (options.in_seconds) milliseconds *= 1000;
    return TimePoint(Milliseconds(now + milliseconds));
}

// INCR, DECR, INCRBY, DECRBY: a missing key counts as 0; the key keeps its expiry time.
void add_to_integer(Call& call, long long increment) {
    const std::string& key = call.arguments[1];
    Value* const value = call.keyspace.find(key, call.now);
    std::string* const text = string_of(value);
    if (value && !text) return call.reply.error(kWrongTypeError);
    long long number = 0;
    if (text) {
        const auto parsed = resp::integer_of(*text);
        if (!parsed) return call.reply.error(kNotIntegerError);
        number = *parsed;
    }
    if ((increment < 0 && number < 0 && increment < LLONG_MIN - number) ||
        (increment > 0 && number > 0 && increment > LLONG_MAX - number))
        return call.reply.error(kOverflowError);
    number += increment;
    if (text)
        *text = std::to_string(number);
    else
        call.keyspace.set(key, std::to_string(number));
    call.reply.integer(number);
}

}  // namespace

void get_command(Call& call) {
    Value* const value = call.keyspace.find(call.arguments[1], call.now);
    if (!value) return call.reply.null_bulk();
    const std::string* const text = string_of(value);
    if (!text) return call.reply.error(kWrongTypeError);
    call.reply.bulk(*text);
}

// SET key value [NX | XX] [GET] [EX seconds | PX milliseconds | KEEPTTL].
// The options and the expiry are checked before anything changes; with GET
// the old value is the reply (a list's key is WRONGTYPE, and nothing is set).
void set_command(Call& call) {
    const auto options = set_options(call.arguments);
    if (!options) return call.reply.error(kSyntaxError);
    std::optional<TimePoint> expires_at;
    if (options->expire && !(expires_at = set_expiry_time(call, *options))) return;
    const std::string& key = call.arguments[1];
    Value* const old = call.keyspace.find(key, call.now);
    if (options->get) {
        if (old && !string_of(old)) return call.reply.error(kWrongTypeError);
        old ? call.reply.bulk(*string_of(old)) : call.reply.null_bulk();
    }
    if ((options->if_missing && old) || (options->if_present && !old)) {
        if (!options->get) call.reply.null_bulk();
        return;
    }
    call.keyspace.set(key, call.arguments[2], options->keep_ttl);
    if (expires_at) call.keyspace.set_expiry(key, *expires_at);
    if (!options->get) call.reply.ok();
}

void incr_command(Call& call) { add_to_integer(call, 1); }

void decr_command(Call& call) { add_to_integer(call, -1); }

void incrby_command(Call& call) {
    if (const auto increment = integer_argument(call, call.arguments[2])) add_to_integer(call, *increment);
}

// Its negation would overflow: Redis says so in words of its own.
void decrby_command(Call& call) {
    const auto decrement = integer_argument(call, call.arguments[2]);
    if (!decrement) return;
    if (*decrement == LLONG_MIN) return call.reply.error("ERR decrement would overflow");
    add_to_integer(call, -*decrement);
}

// A key that is missing or holds a list is a null in the array, not an error.
void mget_command(Call& call) {
    call.reply.array(call.arguments.size() - 1);
    for (std::size_t i = 1; i < call.arguments.size(); ++i) {
        const std::string* const text = string_of(call.keyspace.find(call.arguments[i], call.now));
        text ? call.reply.bulk(*text) : call.reply.null_bulk();
    }
}

// Keys and values in pairs; an odd count is an arity error, as Redis has it.
void mset_command(Call& call) {
    if (call.arguments.size() % 2 == 0) return reply_arity_error(call, "mset");
    for (std::size_t i = 1; i < call.arguments.size(); i += 2) call.keyspace.set(call.arguments[i], call.arguments[i + 1]);
    call.reply.ok();
}

}  // namespace kv
