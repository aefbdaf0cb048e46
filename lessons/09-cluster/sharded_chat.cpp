// sharded_chat.cpp — lesson 9: a thread's room, its relay from the feed, and each member's fiber.
#include "sharded_chat.hpp"

#include <poll.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string_view>
#include <system_error>
#include <utility>

#include "../06-time-and-events/chat_lines.hpp"
#include "../06-time-and-events/chat_room.hpp"
#include "../06-time-and-events/fiber_server.hpp"
#include "fib/fiber.hpp"
#include "fib/io.hpp"
#include "fib/wait_any.hpp"
#include "sharded.hpp"

// The members on one thread. Never blocks: a delivery is an append to an
// outbox (or a line dropped for a slow reader), as in lesson 6's ChatRoom.
class ChatCluster::Room {
public:
    explicit Room(ChatCluster& chat) : chat_(chat) {}

    void add(ChatMember& member) { members_.push_back(&member); }
    void remove(ChatMember& member) { members_.remove(&member); }

    // To every member of this thread but `from` (nullptr: to all).
    void deliver(const ChatMember* from, std::string_view line) {
        std::uint64_t dropped = 0;
        for (ChatMember* member = members_.front(); member; member = members_.next(member))
            if (member != from && !member->deliver(line)) ++dropped;
        if (dropped > 0) chat_.dropped_.fetch_add(dropped, std::memory_order_relaxed);
    }

private:
    ChatCluster& chat_;
    fib::IntrusiveList<ChatMember, &ChatMember::link> members_;
};

class ChatCluster::Server : public FiberServer {
public:
    Server(fib::UniqueFd listener, ChatCluster& chat, Room& room, std::size_t index)
        : FiberServer("cluster_chat", std::move(listener)), chat_(chat), room_(room), index_(index) {}

protected:
    void serve_client(int socket) override;

private:
    // A line about `member` to every other member, here and on the other
    // threads. False if the fiber was cancelled meanwhile.
    bool say(const ChatMember& member, const std::string& line) {
        room_.deliver(&member, line);
        return chat_.publish(index_, line);
    }
    int chat_until_closed(ChatMember& member);

    ChatCluster& chat_;
    Room& room_;
    std::size_t index_;
};

// Lesson 6's member fiber, with a welcome that says which thread serves it.
void ChatCluster::Server::serve_client(int socket) {
    std::optional<ChatMember> member;
    try {
        member.emplace(++chat_.last_number_, socket);
    } catch (const std::system_error& error) {
        std::fprintf(stderr, "cluster_chat: %s: %s\n", fib::this_fiber::name(), error.what());
        return;
    }
    chat_.served_[index_].fetch_add(1, std::memory_order_relaxed);
    const std::size_t in_room = chat_.members_.fetch_add(1, std::memory_order_relaxed) + 1;
    if (!chat_.options_.quiet)
        std::fprintf(stderr, "cluster_chat: %s joined on thread %zu\n", member->name(), index_);
    member->deliver(std::string("*** you are ") + member->name() + " on thread " +
                    std::to_string(index_) + "; " + std::to_string(in_room) + " in the room\n");
    room_.add(*member);
    int error = say(*member, std::string("*** ") + member->name() + " joined\n") ? 0 : ECANCELED;
    if (error == 0) error = chat_until_closed(*member);
    room_.remove(*member);
    chat_.members_.fetch_sub(1, std::memory_order_relaxed);
    // Said even while the server stops: a cancelled fiber's publish fails at once, harmlessly.
    say(*member, std::string("*** ") + member->name() + " left\n");
    if (!chat_.options_.quiet)
        std::fprintf(stderr, "cluster_chat: %s left%s%s\n", member->name(), error ? ": " : "",
                     error ? std::strerror(error) : "");
}

// Send what the others said, then wait for the client or for more news.
// Returns 0 when the client closed, else the errno that ended it.
int ChatCluster::Server::chat_until_closed(ChatMember& member) {
    LineSplitter lines;
    std::string framed;
    char buffer[4096];
    for (;;) {
        if (!member.send_outbox(chat_.options_.write_timeout)) {
            if (errno == ETIMEDOUT) reset_on_close(member.socket());
            return errno;
        }
        const fib::Source sources[] = {{member.socket(), POLLIN}, member.mail()};
        const fib::Ready ready = fib::wait_any(sources);
        if (ready.cancelled()) return ECANCELED;
        if (ready.index == 1) continue;  // send_outbox() resets the mail
        const ssize_t received = fib::io::read(member.socket(), buffer, sizeof buffer);
        if (received <= 0) return received < 0 ? errno : 0;
        bool stopped = false;
        lines.feed(std::string_view(buffer, static_cast<std::size_t>(received)),
                   [&](std::string_view text) {
                       if (stopped) return;
                       framed.assign(member.name()).append(": ").append(text).append("\n");
                       chat_.said_.fetch_add(1, std::memory_order_relaxed);
                       stopped = !say(member, framed);
                   });
        if (stopped) return ECANCELED;
    }
}

ChatCluster::ChatCluster(std::size_t threads, std::vector<fib::UniqueFd> listeners,
                         const ChatClusterOptions& options)
    : options_(options),
      listeners_(std::move(listeners)),
      feeds_(threads),
      feeds_made_(static_cast<std::ptrdiff_t>(threads)),
      served_(std::make_unique<std::atomic<std::uint64_t>[]>(threads)) {}

ChatCluster::~ChatCluster() = default;

std::uint64_t ChatCluster::clients_served(std::size_t index) const {
    return served_[index].load(std::memory_order_relaxed);
}

// Sends in thread order, parking while a feed is full. A closed feed (its
// thread has stopped) refuses the line, and that is all.
bool ChatCluster::publish(std::size_t from, const std::string& line) {
    for (std::size_t to = 0; to < feeds_.size(); ++to) {
        if (to == from) continue;
        if (!feeds_[to]->send(line) && fib::this_fiber::cancelled()) return false;
    }
    return true;
}

// The feed is made here and the thread waits (blocking: it has nothing else
// to do yet) until every thread has made its own, so that publish() finds
// them all. The stop: serve() returns once every client has left; then the
// feed is closed, and the relay hands on what is left in it and ends.
void ChatCluster::serve(std::size_t index) {
    feeds_[index] = std::make_unique<fib::Mailbox<std::string>>(options_.feed_capacity);
    feeds_made_.arrive_and_wait();
    fib::Mailbox<std::string>& feed = *feeds_[index];
    Room room(*this);
    Server server(std::move(listeners_[index]), *this, room, index);
    fib::Fiber relay({.name = "feed relay"}, [&] {
        while (std::optional<std::string> line = feed.receive()) room.deliver(nullptr, *line);
    });
    serve_until_stopped(server);
    feed.close();
    relay.join();
}
