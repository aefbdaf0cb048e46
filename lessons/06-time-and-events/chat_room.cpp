// chat_room.cpp — lesson 6: the fan-out into bounded outboxes, and a member's sending side.
#include "chat_room.hpp"

#include <cstdio>
#include <string>

#include "fib/wait_any.hpp"

ChatMember::ChatMember(unsigned number, int socket, bool eventfd_mail)
    : socket_(socket), eventfd_mail_(eventfd_mail) {
    std::snprintf(name_, sizeof name_, "user %u", number);
}

// Once a line has been dropped, later lines are dropped too, even ones that
// would fit, until the fiber takes the outbox. So the lines missing form one
// gap, and the notice placed in front of the next batch sits exactly there.
// The mail is set only on the empty -> non-empty step: a room busy with a
// hundred lines wakes the member's fiber once per batch, not once per line.
bool ChatMember::deliver(std::string_view line) {
    if (dropped_ > 0 || outbox_.size() + line.size() > kOutboxBytes) {
        ++dropped_;
        return false;
    }
    const bool was_empty = outbox_.empty();
    outbox_.append(line);
    if (was_empty) {
        if (eventfd_mail_)
            mail_.set_through_eventfd();
        else
            mail_.set();
    }
    return true;
}

// Double buffering: the outbox and the batch in flight trade places, so the
// room can go on filling the (now empty) outbox while send_all() waits for a
// slow client, without ever moving the bytes being sent. Both keep their
// capacity: after the first batches, sending allocates nothing.
//
// Taking the outbox resets the mail, whatever woke the fiber. A mail left set
// after the socket won would make every later wait_any return at once, so the
// fiber of a client that keeps sending would never park: it would read on and
// on, holding the thread, and no other member, no timer and so no write
// deadline would run. Checked by
// L06_Chat.TakingTheOutboxResetsTheMailSoAMemberWhoseClientKeepsSendingStillParks.
bool ChatMember::send_outbox(fib::Clock::duration timeout) {
    if (outbox_.empty()) return true;
    mail_.try_wait();
    in_flight_.swap(outbox_);
    if (dropped_ > 0) {
        char notice[80];
        std::snprintf(notice, sizeof notice, "*** %llu line%s dropped: you read too slowly\n",
                      static_cast<unsigned long long>(dropped_), dropped_ == 1 ? "" : "s");
        in_flight_.append(notice);
        missed_ += dropped_;
        dropped_ = 0;
    }
    const bool sent =
        fib::io::send_all(socket_, in_flight_.data(), in_flight_.size(), timeout) >= 0;
    in_flight_.clear();
    return sent;
}

void ChatRoom::join(ChatMember& member) {
    members_.push_back(&member);
    deliver_to_others(member, std::string("*** ") + member.name() + " joined\n");
    member.deliver(std::string("*** you are ") + member.name() + "; " + std::to_string(size()) +
                   " in the room\n");
}

void ChatRoom::leave(ChatMember& member) {
    members_.remove(&member);
    deliver_to_others(member, std::string("*** ") + member.name() + " left\n");
}

void ChatRoom::relay(const ChatMember& from, std::string_view text) {
    line_.assign(from.name()).append(": ").append(text).append("\n");
    deliver_to_others(from, line_);
    relayed_.fetch_add(1, std::memory_order_relaxed);
}

// Never blocks, never writes to a socket: a member that reads slowly costs
// the sender one append (or one dropped line), like any other member.
void ChatRoom::deliver_to_others(const ChatMember& from, std::string_view line) {
    std::uint64_t dropped = 0;
    for (ChatMember* member = members_.front(); member; member = members_.next(member))
        if (member != &from && !member->deliver(line)) ++dropped;
    if (dropped > 0) dropped_.fetch_add(dropped, std::memory_order_relaxed);
}
