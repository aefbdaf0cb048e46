// list_commands.cpp — lesson 13: LPUSH, RPUSH, LPOP, RPOP, LLEN, LRANGE (Redis's src/t_list.c).
#include <algorithm>
#include <string>
#include <utility>

#include "handlers.hpp"

namespace kv {
namespace {

// A list is created by its first push and deleted with its last element:
// Redis never keeps an empty list. A push may serve clients blocked on the
// key (blocking.hpp), once this command has ended.
void push(Call& call, End end) {
    const std::string& key = call.arguments[1];
    Value* value = call.keyspace.find(key, call.now);
    if (value && !list_of(value)) return call.reply.error(kWrongTypeError);
    if (!value) value = &call.keyspace.set(key, new_list());
    List& list = *list_of(value);
    for (std::size_t i = 2; i < call.arguments.size(); ++i)
        end == End::kHead ? list.push_front(call.arguments[i]) : list.push_back(call.arguments[i]);
    call.reply.integer(static_cast<long long>(list.size()));
    call.store.blocked.pushed(key);
}

// LPOP key [count], RPOP key [count], by popGenericCommand. Without a count:
// an element, or a null bulk. With one: an array of up to count elements in
// the order popped, a null array for a missing key, an empty one for count 0.
void pop(Call& call, End end, std::string_view name) {
    const bool counted = call.arguments.size() == 3;
    if (call.arguments.size() > 3) return reply_arity_error(call, name);
    long long count = 1;
    if (counted) {
        const auto parsed = integer_argument(call, call.arguments[2], "ERR value is out of range, must be positive");
        if (!parsed) return;
        if (*parsed < 0) return call.reply.error("ERR value is out of range, must be positive");
        count = *parsed;
    }
    const std::string& key = call.arguments[1];
    Value* const value = call.keyspace.find(key, call.now);
    if (!value) return counted ? call.reply.null_array() : call.reply.null_bulk();
    List* const list = list_of(value);
    if (!list) return call.reply.error(kWrongTypeError);
    if (!counted) {
        call.reply.bulk(pop_one(*list, end));
    } else {
        const std::size_t popped = std::min<unsigned long long>(count, list->size());
        call.reply.array(popped);
        for (std::size_t i = 0; i < popped; ++i) call.reply.bulk(pop_one(*list, end));
    }
    if (list->empty()) call.keyspace.erase(key, call.now);
}

}  // namespace

void lpush_command(Call& call) { push(call, End::kHead); }

void rpush_command(Call& call) { push(call, End::kTail); }

void lpop_command(Call& call) { pop(call, End::kHead, "lpop"); }

void rpop_command(Call& call) { pop(call, End::kTail, "rpop"); }

void llen_command(Call& call) {
    Value* const value = call.keyspace.find(call.arguments[1], call.now);
    if (!value) return call.reply.integer(0);
    const List* const list = list_of(value);
    if (!list) return call.reply.error(kWrongTypeError);
    call.reply.integer(static_cast<long long>(list->size()));
}

// LRANGE key start stop, by addListRangeReply: negative indexes count from
// the end (-1 is the last), both ends are included, and a range that falls
// outside the list is clipped to it, or empty.
void lrange_command(Call& call) {
    const auto first = integer_argument(call, call.arguments[2]);
    if (!first) return;
    const auto last = integer_argument(call, call.arguments[3]);
    if (!last) return;
    Value* const value = call.keyspace.find(call.arguments[1], call.now);
    if (!value) return call.reply.array(0);
    const List* const list = list_of(value);
    if (!list) return call.reply.error(kWrongTypeError);
    const long long length = static_cast<long long>(list->size());
    long long start = *first < 0 ? length + *first : *first;
    long long stop = *last < 0 ? length + *last : *last;
    if (start < 0) start = 0;
    if (start > stop || start >= length) return call.reply.array(0);
    if (stop >= length) stop = length - 1;
    call.reply.array(static_cast<std::size_t>(stop - start + 1));
    for (long long i = start; i <= stop; ++i) call.reply.bulk((*list)[static_cast<std::size_t>(i)]);
}

}  // namespace kv
