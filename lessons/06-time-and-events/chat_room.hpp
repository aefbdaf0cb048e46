// chat_room.hpp — lesson 6: the chat room: its members, their bounded outboxes, and the fan-out.
//
//   ChatRoom room;                                  // in the chat server, one per server
//   ChatMember member(7, socket);                   // in member 7's fiber
//   room.join(member);                              // "*** user 7 joined" to the others
//   room.relay(member, "hello");                    // "user 7: hello\n" to every other member
//   member.send_outbox();                           // member 7's fiber sends what it was given
//   room.leave(member);                             // "*** user 7 left" to the others
//
// The room never writes to a socket. relay() only appends the line to every
// other member's outbox, and each member's own fiber sends its outbox to its
// client. So a client that reads slowly blocks its own fiber and nobody else:
// the room goes on at the speed of the others.
//
//   user 2's fiber: read "hi\n" --relay--> outbox of user 1 --mail--> user 1's fiber: send
//                                      \-> outbox of user 3 --mail--> user 3's fiber: send
//
// A member's fiber waits on its socket and on its mail (an Event) at once,
// with wait_any. A CondVar would not do: wait_any waits on fds and Events.
// The room and the member's fiber share a thread, so setting the mail costs
// no system call (event.hpp). The room sets it only when the outbox goes from
// empty to non-empty, not for every line.
//
// The outbox is bounded (kOutboxBytes). A line that does not fit is dropped
// whole, never cut, and so is every line after it until the member's fiber
// takes the outbox to send it. Then the client is told how many it missed,
// at the very place they are missing:
//
//   user 2: line 40
//   *** 17 lines dropped: you read too slowly
//   user 2: line 58
//
// Everything here runs on the server's thread; only the counters are read
// from other threads.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fib/event.hpp"
#include "fib/intrusive_list.hpp"
#include "fib/timer_heap.hpp"

// One client in the room; lives in its fiber's frame.
class ChatMember {
public:
    // 64 KiB: over 15 lines of the longest kind (LineSplitter::kMaxLine), or
    // some 2,000 short ones. With the batch being sent, a member holds at most
    // about twice this, however slowly its client reads.
    static constexpr std::size_t kOutboxBytes = 64 * 1024;

    // Throws std::system_error if there is no eventfd for the mail. With
    // `eventfd_mail`, the room sets the mail through its eventfd, as another
    // thread would (chat_server --eventfd-mail): two system calls more per
    // delivery, which scripts/count-syscalls.py shows.
    ChatMember(unsigned number, int socket, bool eventfd_mail = false);

    const char* name() const { return name_; }  // "user 7"
    int socket() const { return socket_; }
    // Signaled while the outbox may hold lines the fiber has not taken.
    fib::Event& mail() { return mail_; }
    std::uint64_t lines_missed() const { return missed_; }  // dropped for this client so far

    // The room's side: queues `line` (newline included) whole, or drops it
    // and returns false.
    bool deliver(std::string_view line);

    // The fiber's side: takes what the outbox holds (with a notice of lines
    // dropped, if any), resets the mail, and sends it, blocking this fiber
    // only. One batch per call, so that the fiber also gets to read its client
    // between batches.
    // False if the send failed (errno says why: ETIMEDOUT when the client did
    // not take the whole batch within `timeout`).
    bool send_outbox(fib::Clock::duration timeout);

    fib::ListLink<ChatMember> link;  // in the room's list of members

private:
    char name_[24];
    int socket_;
    bool eventfd_mail_;
    fib::Event mail_;
    std::string outbox_;         // what the room gave, not yet taken; at most kOutboxBytes
    std::string in_flight_;      // the batch being sent; the room never touches it
    std::uint64_t dropped_ = 0;  // lines dropped since the outbox was last taken
    std::uint64_t missed_ = 0;
};

class ChatRoom {
public:
    // Adds `member`; it is welcomed ("*** you are user 7; 3 in the room") and
    // the others are told ("*** user 7 joined").
    void join(ChatMember& member);
    // Removes `member`; the others are told ("*** user 7 left").
    void leave(ChatMember& member);
    // `text` from `from` to every other member, as "user 7: text\n".
    void relay(const ChatMember& from, std::string_view text);

    std::size_t size() const { return members_.size(); }
    ChatMember* first() const { return members_.front(); }
    static ChatMember* next(const ChatMember* member) { return decltype(members_)::next(member); }

    // Readable from any thread.
    std::uint64_t lines_relayed() const { return relayed_.load(std::memory_order_relaxed); }
    std::uint64_t lines_dropped() const { return dropped_.load(std::memory_order_relaxed); }

private:
    void deliver_to_others(const ChatMember& from, std::string_view line);

    fib::IntrusiveList<ChatMember, &ChatMember::link> members_;
    std::string line_;  // the line being relayed, framed; reused, so no allocation per line
    std::atomic<std::uint64_t> relayed_{0};  // lines relayed (each counted once, not per reader)
    std::atomic<std::uint64_t> dropped_{0};  // deliveries dropped, summed over all members
};
