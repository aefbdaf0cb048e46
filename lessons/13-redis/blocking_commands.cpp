// blocking_commands.cpp — lesson 13: BLPOP and BRPOP, whose fiber waits in the middle of the command.
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <string>
#include <variant>
#include <vector>

#include "handlers.hpp"

namespace kv {

// As getTimeoutFromObjectOrReply reads it: strtold must take the whole
// argument; negative, or past what milliseconds since the epoch can hold,
// is refused.
std::optional<fib::Clock::duration> timeout_argument(Call& call, const std::string& text) {
    char* end = nullptr;
    errno = 0;
    const long double seconds = text.empty() || std::isspace(static_cast<unsigned char>(text[0]))
                                    ? NAN
                                    : std::strtold(text.c_str(), &end);
    if (std::isnan(seconds) || errno == ERANGE || end != text.c_str() + text.size()) {
        call.reply.error("ERR timeout is not a float or out of range");
        return std::nullopt;
    }
    const long double milliseconds = seconds * 1000.0L;
    if (milliseconds <= -1.0L) {
        call.reply.error("ERR timeout is negative");
        return std::nullopt;
    }
    // Redis adds the timeout to the Unix time in ms; a year is as good as for ever here.
    if (milliseconds >= 1.0e15L) {
        call.reply.error("ERR timeout is out of range");
        return std::nullopt;
    }
    const auto whole = std::chrono::milliseconds(static_cast<long long>(milliseconds));
    if (whole.count() == 0) return fib::Clock::duration::max();
    return std::chrono::duration_cast<fib::Clock::duration>(whole);
}

namespace {

void reply_served(Call& call, const std::pair<std::string, std::string>& served) {
    call.reply.array(2);
    call.reply.bulk(served.first);
    call.reply.bulk(served.second);
}

// BLPOP key [key ...] timeout: first a plain pop from the first key with a
// list; with none, the fiber blocks (blocking.hpp) until a push serves it.
// A key that holds a string is an error, as in Redis, before any waiting.
// The Waiter (its Event, an eventfd) is made only when the client blocks.
void blocking_pop(Call& call, End end) {
    const auto timeout = timeout_argument(call, call.arguments.back());
    if (!timeout) return;
    for (std::size_t i = 1; i + 1 < call.arguments.size(); ++i) {
        const std::string& key = call.arguments[i];
        Value* const value = call.keyspace.find(key, call.now);
        if (!value) continue;
        List* const list = list_of(value);
        if (!list) return call.reply.error(kWrongTypeError);
        const std::pair<std::string, std::string> popped{key, pop_one(*list, end)};
        if (list->empty()) call.keyspace.erase(key, call.now);
        return reply_served(call, popped);
    }
    BlockedLists::Waiter waiter;
    waiter.end = end;
    waiter.keys.assign(call.arguments.begin() + 1, call.arguments.end() - 1);
    call.store.blocked.add(waiter);
    const WaitEnd how = call.session.wait_to_be_served(waiter.served_event, *timeout);
    if (waiter.served) return reply_served(call, *waiter.served);
    call.store.blocked.remove(waiter);
    if (how == WaitEnd::kGone) call.session.quit = true;
    call.reply.null_array();
}

}  // namespace

void blpop_command(Call& call) { blocking_pop(call, End::kHead); }

void brpop_command(Call& call) { blocking_pop(call, End::kTail); }

}  // namespace kv
