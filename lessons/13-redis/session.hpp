// session.hpp — lesson 13: the state of one client that commands read and change, and how other clients reach it.
//
// Most of a client's state is the connection's (its socket, its buffers:
// kv_connection.hpp). What commands see is here: the id and name HELLO and
// CLIENT report, the channels it subscribed to, and whether QUIT asked for
// the end. Two things make a client reachable from another client's command,
// and the connection overrides both:
//
//   deliver             PUBLISH hands a subscriber a whole message reply; the
//                       connection appends it to what it sends, or drops the
//                       subscriber that holds too much (client-output-buffer-limit)
//   wait_to_be_served   BLPOP parks its fiber here until a push serves it; the
//                       connection first sends the replies before it, and
//                       also watches its socket, so a client that hangs up
//                       while blocked is noticed at once
//
// A Session without a connection (a test's, the snapshot loader's) keeps
// what it is delivered in `delivered`, and waits only for the push.
#pragma once

#include <set>
#include <string>
#include <string_view>

#include "fib/event.hpp"
#include "fib/timer_heap.hpp"

namespace kv {

// How a blocked client's wait ended.
enum class WaitEnd { kServed, kTimedOut, kGone };

class Session {
public:
    Session() = default;
    virtual ~Session() = default;
    Session(const Session&) = delete;
    Session& operator=(const Session&) = delete;

    // A reply for this client from another's command (a PUBLISH message).
    virtual void deliver(std::string_view reply) { delivered += reply; }

    // Before a command parks for long: the replies of the commands before it
    // go out now (a pipelining client waits for them). wait_to_be_served
    // does it; so does the per-core variant before a forwarded BLPOP.
    virtual void flush() {}

    // Parks the running fiber until `served` is set (kServed), `timeout`
    // passes (kTimedOut; Clock::duration::max(): never), or the client is
    // gone: it hung up, or its fiber was cancelled (kGone).
    virtual WaitEnd wait_to_be_served(fib::Event& served, fib::Clock::duration timeout);

    long long id = 0;              // HELLO's "id"
    std::string name;              // CLIENT SETNAME's; empty when none
    std::set<std::string> channels;  // SUBSCRIBE's; while any, only the pub/sub commands run
    bool quit = false;             // QUIT: close once the replies so far have gone
    std::string delivered;         // deliver()'s, when there is no connection
};

}  // namespace kv
