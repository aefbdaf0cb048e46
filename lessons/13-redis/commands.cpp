// commands.cpp — lesson 13: the command table, execute()'s dispatch, and the commands of the connection itself.
//
// The arities are Redis's (src/commands/*.json), and so are the error texts
// of the dispatch (commandCheckExistence, commandCheckArity in src/server.c).
#include "commands.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <climits>
#include <string>
#include <unordered_map>
#include <vector>

#include "glob.hpp"
#include "handlers.hpp"

namespace kv {

std::optional<long long> integer_argument(Call& call, std::string_view argument, std::string_view error) {
    auto number = resp::integer_of(argument);
    if (!number) call.reply.error(error);
    return number;
}

void reply_arity_error(Call& call, std::string_view name) {
    call.reply.error("ERR wrong number of arguments for '" + std::string(name) + "' command");
}

char ascii_lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

bool is_option(std::string_view argument, std::string_view option) {
    return std::ranges::equal(argument, option, [](char a, char b) { return ascii_lower(a) == ascii_lower(b); });
}

namespace {

// What HELLO says of the server: the Redis release whose replies these
// are (Debian 12's redis-server), so that a client library picks the same
// features it would pick with Redis.
constexpr std::string_view kRedisVersion = "7.0.15";

// CONFIG GET's answers: the two that redis-benchmark asks for, as a server
// run with --save '' --appendonly no answers them.
constexpr std::array<std::pair<std::string_view, std::string_view>, 2> kConfig = {{
    {"save", ""},
    {"appendonly", "no"},
}};

// In subscriber mode, PING is an array, as the messages are: ["pong", message or ""].
void subscribed_ping(Call& call) {
    call.reply.array(2);
    call.reply.bulk("pong");
    call.reply.bulk(call.arguments.size() == 2 ? std::string_view(call.arguments[1]) : std::string_view());
}

// PING [message]: +PONG, or the message as a bulk.
void ping_command(Call& call) {
    if (call.arguments.size() > 2) return reply_arity_error(call, "ping");
    if (!call.session.channels.empty()) return subscribed_ping(call);
    call.arguments.size() == 1 ? call.reply.simple("PONG") : call.reply.bulk(call.arguments[1]);
}

void echo_command(Call& call) { call.reply.bulk(call.arguments[1]); }

// QUIT: +OK, then the connection closes once that reply has gone.
void quit_command(Call& call) {
    call.session.quit = true;
    call.reply.ok();
}

// There is one database, 0, as in a Redis run with "databases 1".
void select_command(Call& call) {
    const auto index = integer_argument(call, call.arguments[1]);
    if (!index) return;
    if (*index < INT_MIN || *index > INT_MAX) return call.reply.error("ERR value is out of range");
    if (*index != 0) return call.reply.error("ERR DB index is out of range");
    call.reply.ok();
}

// COMMAND alone and COMMAND DOCS: an empty array, which redis-cli takes for
// "no documentation" (Redis sends every command's). COMMAND COUNT: the table's size.
void command_command(Call& call) { call.reply.array(0); }

void command_count_command(Call& call) { call.reply.integer(static_cast<long long>(command_table().size())); }

// CONFIG GET pattern...: a name without * ? [ is looked up as it is, any
// other is matched as a glob; both ignore case, as configGetCommand does.
// Each name is answered once, with its value.
void config_get_command(Call& call) {
    std::vector<bool> matched(kConfig.size());
    for (std::size_t i = 2; i < call.arguments.size(); ++i) {
        const std::string& pattern = call.arguments[i];
        const bool is_glob = pattern.find_first_of("[*?") != std::string::npos;
        for (std::size_t j = 0; j < kConfig.size(); ++j)
            if (is_glob ? glob_match(pattern, kConfig[j].first, true) : is_option(pattern, kConfig[j].first))
                matched[j] = true;
    }
    call.reply.array(2 * static_cast<std::size_t>(std::ranges::count(matched, true)));
    for (std::size_t j = 0; j < kConfig.size(); ++j) {
        if (!matched[j]) continue;
        call.reply.bulk(kConfig[j].first);
        call.reply.bulk(kConfig[j].second);
    }
}

// validateClientName: any bytes from '!' to '~', or none (which removes the name).
bool valid_client_name(std::string_view name) {
    return std::ranges::all_of(name, [](char c) { return c >= '!' && c <= '~'; });
}

constexpr std::string_view kClientNameError = "ERR Client names cannot contain spaces, newlines or special characters.";

void client_setname_command(Call& call) {
    if (!valid_client_name(call.arguments[2])) return call.reply.error(kClientNameError);
    call.session.name = call.arguments[2];
    call.reply.ok();
}

void client_id_command(Call& call) { call.reply.integer(call.session.id); }

void client_getname_command(Call& call) {
    call.session.name.empty() ? call.reply.null_bulk() : call.reply.bulk(call.session.name);
}

// INFO [section ...]: the fields client libraries read on connect (ioredis
// waits for loading:0; monitoring reads the clients and the keyspace), in
// Redis's format: "# Section" lines, then field:value lines, \r\n between.
// Only the sections and fields this server has; a section it does not
// have is answered with nothing, as Redis answers an unknown one.
void info_command(Call& call) {
    const auto wanted = [&](std::string_view section) {
        if (call.arguments.size() == 1) return true;
        return std::any_of(call.arguments.begin() + 1, call.arguments.end(), [&](const std::string& name) {
            return is_option(name, section) || is_option(name, "all") || is_option(name, "everything") ||
                   is_option(name, "default");
        });
    };
    std::string text;
    if (wanted("server"))
        text += "# Server\r\nredis_version:" + std::string(kRedisVersion) + "\r\nredis_mode:standalone\r\n\r\n";
    if (wanted("persistence")) text += "# Persistence\r\nloading:0\r\n\r\n";
    if (wanted("keyspace")) {
        text += "# Keyspace\r\n";
        if (call.keyspace.size() != 0)
            text += "db0:keys=" + std::to_string(call.keyspace.size()) +
                    ",expires=" + std::to_string(call.keyspace.size_with_expiry()) + ",avg_ttl=0\r\n";
        text += "\r\n";
    }
    if (text.ends_with("\r\n\r\n")) text.resize(text.size() - 2);
    call.reply.bulk(text);
}

// HELLO [protover [AUTH username password] [SETNAME name]], by helloCommand.
// Only RESP2 is spoken: HELLO 3 is refused as Redis refuses HELLO 4. There
// are no passwords: the user "default" is let in with any, as Redis lets it
// in when it has none.
void hello_command(Call& call) {
    const resp::Command& arguments = call.arguments;
    if (arguments.size() >= 2) {
        const auto version = integer_argument(call, arguments[1], "ERR Protocol version is not an integer or out of range");
        if (!version) return;
        if (*version != 2) return call.reply.error("NOPROTO unsupported protocol version");
    }
    std::optional<std::string> name;
    for (std::size_t i = 2; i < arguments.size(); ++i) {
        const std::size_t more = arguments.size() - 1 - i;
        if (is_option(arguments[i], "AUTH") && more >= 2) {
            if (arguments[i + 1] != "default")
                return call.reply.error("WRONGPASS invalid username-password pair or user is disabled.");
            i += 2;
        } else if (is_option(arguments[i], "SETNAME") && more >= 1) {
            if (!valid_client_name(arguments[i + 1])) return call.reply.error(kClientNameError);
            name = arguments[++i];
        } else {
            return call.reply.error("ERR Syntax error in HELLO option '" + arguments[i] + "'");
        }
    }
    if (name) call.session.name = *name;
    call.reply.array(14);
    call.reply.bulk("server");
    call.reply.bulk("redis");
    call.reply.bulk("version");
    call.reply.bulk(kRedisVersion);
    call.reply.bulk("proto");
    call.reply.integer(2);
    call.reply.bulk("id");
    call.reply.integer(call.session.id);
    call.reply.bulk("mode");
    call.reply.bulk("standalone");
    call.reply.bulk("role");
    call.reply.bulk("master");
    call.reply.bulk("modules");
    call.reply.array(0);
}

constexpr CommandSpec kCommandSubcommands[] = {
    {"command|count", 2, command_count_command},
    {"command|docs", -2, command_command},
};
constexpr CommandSpec kConfigSubcommands[] = {
    {"config|get", -3, config_get_command},
};
constexpr CommandSpec kClientSubcommands[] = {
    {"client|id", 2, client_id_command},
    {"client|getname", 2, client_getname_command},
    {"client|setname", 3, client_setname_command},
};

constexpr CommandSpec kCommands[] = {
    {"ping", -1, ping_command},
    {"echo", 2, echo_command},
    {"select", 2, select_command},
    {"hello", -1, hello_command},
    {"info", -1, info_command},
    {"command", -1, command_command, {}, kCommandSubcommands},
    {"config", -2, nullptr, {}, kConfigSubcommands},
    {"client", -2, nullptr, {}, kClientSubcommands},
    {"get", 2, get_command, {1, 1, 1}},
    {"set", -3, set_command, {1, 1, 1}},
    {"incr", 2, incr_command, {1, 1, 1}},
    {"decr", 2, decr_command, {1, 1, 1}},
    {"incrby", 3, incrby_command, {1, 1, 1}},
    {"decrby", 3, decrby_command, {1, 1, 1}},
    {"mget", -2, mget_command, {1, -1, 1}},
    {"mset", -3, mset_command, {1, -1, 2}},
    {"del", -2, del_command, {1, -1, 1}},
    {"exists", -2, exists_command, {1, -1, 1}},
    {"expire", -3, expire_command, {1, 1, 1}},
    {"pexpire", -3, pexpire_command, {1, 1, 1}},
    {"ttl", 2, ttl_command, {1, 1, 1}},
    {"pttl", 2, pttl_command, {1, 1, 1}},
    {"persist", 2, persist_command, {1, 1, 1}},
    {"type", 2, type_command, {1, 1, 1}},
    {"dbsize", 1, dbsize_command, {.every_thread = true}},
    {"flushall", -1, flushall_command, {.every_thread = true}},
    {"keys", 2, keys_command, {.every_thread = true}},
    {"lpush", -3, lpush_command, {1, 1, 1}},
    {"rpush", -3, rpush_command, {1, 1, 1}},
    {"lpop", -2, lpop_command, {1, 1, 1}},
    {"rpop", -2, rpop_command, {1, 1, 1}},
    {"llen", 2, llen_command, {1, 1, 1}},
    {"lrange", 4, lrange_command, {1, 1, 1}},
    {"blpop", -3, blpop_command, {1, -2, 1}, {}, true},
    {"brpop", -3, brpop_command, {1, -2, 1}, {}, true},
    {"subscribe", -2, subscribe_command},
    {"unsubscribe", -1, unsubscribe_command},
    {"publish", 3, publish_command, {.every_thread = true}},
    {"quit", -1, quit_command},
    {"save", 1, save_command, {.every_thread = true}},
};

// What a client in subscriber mode may run (processCommand's list; the
// sharded and pattern kinds are not here).
bool allowed_when_subscribed(const CommandSpec& spec) {
    return spec.handler == subscribe_command || spec.handler == unsubscribe_command || spec.handler == ping_command ||
           spec.handler == quit_command;
}

// A subcommand's name is what follows its container's and the '|'.
std::string_view short_name(std::string_view name) { return name.substr(name.find('|') + 1); }

const CommandSpec* find_spec(std::span<const CommandSpec> table, std::string_view name) {
    const auto spec = std::ranges::find_if(table, [&](const CommandSpec& spec) { return is_option(name, short_name(spec.name)); });
    return spec == table.end() ? nullptr : &*spec;
}

// A command by its name, in any case: one hash lookup of the name in lower
// case (a walk of the table, comparing each name without case, was a few
// percent of a GET's time). Subcommands are few, and found by find_spec.
const CommandSpec* find_command(std::string_view name) {
    static const auto by_name = [] {
        std::unordered_map<std::string_view, const CommandSpec*> map;
        for (const CommandSpec& spec : kCommands) map.emplace(spec.name, &spec);
        return map;
    }();
    char lower[16];
    if (name.size() > sizeof lower) return nullptr;
    std::ranges::transform(name, lower, ascii_lower);
    const auto found = by_name.find(std::string_view(lower, name.size()));
    return found == by_name.end() ? nullptr : found->second;
}

// Redis prints a name or an argument with "%.128s": up to its first NUL, and 128 bytes at most.
std::string_view as_c_string(std::string_view bytes, std::size_t most) {
    return bytes.substr(0, std::min(bytes.find('\0'), most));
}

// "ERR unknown command 'foo', with args beginning with: 'a' 'b' ": the
// arguments quoted while fewer than 128 bytes of them are written.
void reply_unknown_command(Call& call) {
    std::string quoted;
    for (std::size_t i = 1; i < call.arguments.size() && quoted.size() < 128; ++i)
        quoted += "'" + std::string(as_c_string(call.arguments[i], 128 - quoted.size())) + "' ";
    call.reply.error("ERR unknown command '" + std::string(as_c_string(call.arguments[0], 128)) +
                     "', with args beginning with: " + quoted);
}

void reply_unknown_subcommand(Call& call, std::string_view container) {
    std::string upper(container);
    for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    call.reply.error("ERR unknown subcommand '" + std::string(as_c_string(call.arguments[1], 128)) + "'. Try " +
                     upper + " HELP.");
}

bool arity_fits(const CommandSpec& spec, std::size_t count) {
    return spec.arity > 0 ? count == static_cast<std::size_t>(spec.arity) : count >= static_cast<std::size_t>(-spec.arity);
}

}  // namespace

std::span<const CommandSpec> command_table() { return kCommands; }

std::vector<std::size_t> key_positions(const CommandSpec& spec, const resp::Command& command) {
    std::vector<std::size_t> positions;
    if (spec.keys.first == 0) return positions;
    const long long count = static_cast<long long>(command.size());
    const long long last = spec.keys.last < 0 ? count + spec.keys.last : spec.keys.last;
    for (long long i = spec.keys.first; i <= last && i < count; i += spec.keys.step)
        positions.push_back(static_cast<std::size_t>(i));
    return positions;
}

namespace {

// The dispatch, with or without the router's say.
void dispatch(const resp::Command& command, Store& store, Session& session, TimePoint now, std::string& out,
              bool may_route) {
    resp::Reply reply(out);
    Call call{command, store, store.keyspace, session, reply, now};
    const CommandSpec* spec = find_command(command[0]);
    if (!spec) return reply_unknown_command(call);
    if (!spec->subcommands.empty() && command.size() >= 2) {
        const CommandSpec* const subcommand = find_spec(spec->subcommands, command[1]);
        if (!subcommand) return reply_unknown_subcommand(call, spec->name);
        spec = subcommand;
    }
    if (!arity_fits(*spec, command.size())) return reply_arity_error(call, spec->name);
    if (!session.channels.empty() && !allowed_when_subscribed(*spec))
        return call.reply.error("ERR Can't execute '" + std::string(spec->name) +
                                "': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context");
    if (may_route && store.router && store.router->route(*spec, command, session, out)) return;
    spec->handler(call);
    store.blocked.serve(store.keyspace, now);
}

}  // namespace

void execute(const resp::Command& command, Store& store, Session& session, TimePoint now, std::string& out) {
    dispatch(command, store, session, now, out, true);
}

void execute_here(const resp::Command& command, Store& store, Session& session, TimePoint now, std::string& out) {
    dispatch(command, store, session, now, out, false);
}

}  // namespace kv
