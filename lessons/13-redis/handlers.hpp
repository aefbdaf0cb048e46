// handlers.hpp — lesson 13: the handlers of the command table, and the error texts they share.
//
// Each handler is called by execute() (commands.cpp) once the argument
// count fits the command's arity, and appends its reply: exactly one, but
// for SUBSCRIBE and UNSUBSCRIBE, which reply once per channel, as Redis does. They are
// grouped by what they act on: string_commands.cpp, key_commands.cpp,
// list_commands.cpp, blocking_commands.cpp, pubsub_commands.cpp, SAVE in
// snapshot.cpp, and the connection's own in commands.cpp.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "commands.hpp"
#include "fib/timer_heap.hpp"

namespace kv {

// Redis's texts (src/server.c createSharedObjects, src/object.c, src/t_string.c).
inline constexpr std::string_view kWrongTypeError = "WRONGTYPE Operation against a key holding the wrong kind of value";
inline constexpr std::string_view kNotIntegerError = "ERR value is not an integer or out of range";
inline constexpr std::string_view kSyntaxError = "ERR syntax error";
inline constexpr std::string_view kOverflowError = "ERR increment or decrement would overflow";

// An argument read as a long long by Redis's rules (resp::integer_of); if it
// is not one, replies `error` and gives nothing.
std::optional<long long> integer_argument(Call& call, std::string_view argument,
                                          std::string_view error = kNotIntegerError);

// A blocking command's timeout, in seconds with decimals; 0 is for ever
// (Clock::duration::max()). If it is not one, replies Redis's error and
// gives nothing.
std::optional<fib::Clock::duration> timeout_argument(Call& call, const std::string& text);

// "ERR wrong number of arguments for 'name' command", for the commands that
// check a count beyond their arity (PING, MSET, LPOP).
void reply_arity_error(Call& call, std::string_view name);

// Case-insensitive equality of an argument and an option name, as strcasecmp
// in the C locale (ASCII letters only).
bool is_option(std::string_view argument, std::string_view option);

void get_command(Call& call);
void set_command(Call& call);
void incr_command(Call& call);
void decr_command(Call& call);
void incrby_command(Call& call);
void decrby_command(Call& call);
void mget_command(Call& call);
void mset_command(Call& call);

void del_command(Call& call);
void exists_command(Call& call);
void expire_command(Call& call);
void pexpire_command(Call& call);
void ttl_command(Call& call);
void pttl_command(Call& call);
void persist_command(Call& call);
void type_command(Call& call);
void dbsize_command(Call& call);
void flushall_command(Call& call);
void keys_command(Call& call);

void lpush_command(Call& call);
void rpush_command(Call& call);
void lpop_command(Call& call);
void rpop_command(Call& call);
void llen_command(Call& call);
void lrange_command(Call& call);

void blpop_command(Call& call);
void brpop_command(Call& call);

void subscribe_command(Call& call);
void unsubscribe_command(Call& call);
void publish_command(Call& call);

void save_command(Call& call);

}  // namespace kv
