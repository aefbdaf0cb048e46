// pubsub.cpp — lesson 13: the subscribers of each channel, and a message delivered to each as a reply.
#include "pubsub.hpp"

#include <algorithm>

#include "reply.hpp"
#include "session.hpp"

namespace kv {

bool Channels::subscribe(Session& session, const std::string& channel) {
    if (!session.channels.insert(channel).second) return false;
    subscribers_[channel].push_back(&session);
    return true;
}

bool Channels::unsubscribe(Session& session, const std::string& channel) {
    if (session.channels.erase(channel) == 0) return false;
    const auto subscribers = subscribers_.find(channel);
    std::erase(subscribers->second, &session);
    if (subscribers->second.empty()) subscribers_.erase(subscribers);
    return true;
}

// A copy of the name: unsubscribe() erases the session's own.
void Channels::forget(Session& session) {
    while (!session.channels.empty()) unsubscribe(session, std::string(*session.channels.begin()));
}

// The reply is written once and handed to every subscriber. deliver() only
// appends (a subscriber past its limit is closed later, by its own fiber),
// so the list cannot change while it is walked.
std::size_t Channels::publish(std::string_view channel, std::string_view message) {
    const auto subscribers = subscribers_.find(channel);
    if (subscribers == subscribers_.end()) return 0;
    std::string bytes;
    resp::Reply reply(bytes);
    reply.array(3);
    reply.bulk("message");
    reply.bulk(channel);
    reply.bulk(message);
    for (Session* subscriber : subscribers->second) subscriber->deliver(bytes);
    return subscribers->second.size();
}

std::size_t Channels::subscribers(std::string_view channel) const {
    const auto subscribers = subscribers_.find(channel);
    return subscribers == subscribers_.end() ? 0 : subscribers->second.size();
}

}  // namespace kv
