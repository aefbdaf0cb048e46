// pubsub_commands.cpp — lesson 13: SUBSCRIBE, UNSUBSCRIBE and PUBLISH (Redis's src/pubsub.c).
#include <string>
#include <vector>

#include "handlers.hpp"

namespace kv {
namespace {

// Each (un)subscription is a reply of its own: the kind, the channel, and
// how many subscriptions the client has left.
void reply_subscription(Call& call, std::string_view kind, const std::string* channel) {
    call.reply.array(3);
    call.reply.bulk(kind);
    channel ? call.reply.bulk(*channel) : call.reply.null_bulk();
    call.reply.integer(static_cast<long long>(call.session.channels.size()));
}

}  // namespace

// SUBSCRIBE channel [channel ...]: one reply per channel named (execute()
// counts replies for the pipeline: a command may append several).
void subscribe_command(Call& call) {
    for (std::size_t i = 1; i < call.arguments.size(); ++i) {
        call.store.channels.subscribe(call.session, call.arguments[i]);
        reply_subscription(call, "subscribe", &call.arguments[i]);
    }
}

// UNSUBSCRIBE [channel ...]: those named, or every one; with none to leave,
// one reply with a null channel.
void unsubscribe_command(Call& call) {
    std::vector<std::string> channels(call.arguments.begin() + 1, call.arguments.end());
    if (channels.empty()) channels.assign(call.session.channels.begin(), call.session.channels.end());
    if (channels.empty()) return reply_subscription(call, "unsubscribe", nullptr);
    for (const std::string& channel : channels) {
        call.store.channels.unsubscribe(call.session, channel);
        reply_subscription(call, "unsubscribe", &channel);
    }
}

void publish_command(Call& call) {
    call.reply.integer(static_cast<long long>(call.store.channels.publish(call.arguments[1], call.arguments[2])));
}

}  // namespace kv
