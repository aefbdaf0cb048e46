// pubsub.hpp — lesson 13: PUBLISH and SUBSCRIBE: channels, their subscribers, and the messages between them.
//
//   SUBSCRIBE news       *3 $9 subscribe $4 news :1    and from then on, for each message:
//                        *3 $7 message $4 news $5 hello
//   PUBLISH news hello   :1                            the subscribers it reached
//
// Lesson 6's chat room grown up. There, each member had a queue of lines and
// a fiber that sent them; here a message is a reply that goes where the
// subscriber's other replies go, its connection's output (Session::deliver),
// which its writer fiber sends. A subscriber that does not read cannot slow
// the publisher down: the publisher only appends. What bounds it is the
// connection's output limit: past it the subscriber is disconnected, as
// Redis's client-output-buffer-limit for pubsub clients does, and the
// publisher and the other subscribers see nothing of it.
//
// A subscribed client is in subscriber mode: only (UN)SUBSCRIBE, PING and
// QUIT run (execute() refuses the others with Redis's error). Pattern
// subscriptions (PSUBSCRIBE) are left out.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace kv {

class Session;

class Channels {
public:
    Channels() = default;
    Channels(const Channels&) = delete;
    Channels& operator=(const Channels&) = delete;

    // Adds `session` to `channel`'s subscribers; false if it was one already.
    bool subscribe(Session& session, const std::string& channel);
    // Removes it; false if it was not one.
    bool unsubscribe(Session& session, const std::string& channel);
    // Removes it from every channel: a connection's last act.
    void forget(Session& session);

    // Delivers the message to every subscriber of `channel`; how many it reached.
    std::size_t publish(std::string_view channel, std::string_view message);

    std::size_t subscribers(std::string_view channel) const;

private:
    struct Hash {
        using is_transparent = void;
        std::size_t operator()(std::string_view text) const { return std::hash<std::string_view>{}(text); }
    };
    std::unordered_map<std::string, std::vector<Session*>, Hash, std::equal_to<>> subscribers_;
};

}  // namespace kv
