// chat_server.cpp — lesson 6: the chat server: one fiber per member, between its socket and the
// room.
#include "chat_server.hpp"

#include <poll.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string_view>
#include <system_error>

#include "chat_lines.hpp"
#include "fib/fiber.hpp"
#include "fib/io.hpp"

ChatServer::ChatServer(const ChatOptions& options)
    : FiberServer("chat_server", options.bind, options.port), options_(options) {}

// One client's fiber: a member of the room while it chats.
void ChatServer::serve_client(int socket) {
    std::optional<ChatMember> member;
    try {
        member.emplace(++last_number_, socket, options_.eventfd_mail);
    } catch (const std::system_error& error) {
        // No eventfd for its mail (out of fds): this client cannot chat.
        std::fprintf(stderr, "chat_server: %s: %s\n", fib::this_fiber::name(), error.what());
        return;
    }
    if (!options_.quiet)
        std::fprintf(stderr, "chat_server: %s joined from %s; %zu in the room\n", member->name(),
                     fib::this_fiber::name(), room_.size() + 1);
    room_.join(*member);
    std::uint64_t said = 0;
    const int error = chat_until_closed(*member, said);
    room_.leave(*member);
    if (!options_.quiet)
        std::fprintf(stderr, "chat_server: %s left (lines said: %llu, missed: %llu)%s%s\n",
                     member->name(), static_cast<unsigned long long>(said),
                     static_cast<unsigned long long>(member->lines_missed()), error ? ": " : "",
                     error ? std::strerror(error) : "");
}

// The member's loop: send what the room gave, then sleep until the client
// says something or the room has more to give, whichever comes first. Until
// the client closes, fails, stalls or idles past a deadline, or the server
// stops (a cancel: ECANCELED). Returns 0 or the errno that ended it; counts
// the lines the member said in `said`.
int ChatServer::chat_until_closed(ChatMember& member, std::uint64_t& said) {
    LineSplitter lines;
    fib::Clock::time_point idle_deadline = fib::deadline_after(options_.idle_timeout);
    // 4 KiB on the fiber's stack: a resident page per member (see SharedReadBuffer).
    char buffer[4096];
    for (;;) {
        if (!member.send_outbox(options_.write_timeout)) {
            const int error = errno;
            if (error == ETIMEDOUT) {
                slow_closed_.fetch_add(1, std::memory_order_relaxed);
                reset_on_close(member.socket());
            }
            return error;
        }
        const fib::Ready ready = wait_for_news(member, idle_deadline);
        if (ready.cancelled()) return ECANCELED;
        if (ready.timed_out()) {
            idle_closed_.fetch_add(1, std::memory_order_relaxed);
            return ETIMEDOUT;
        }
        // Mail: send. send_outbox() resets the mail as it takes the outbox, so
        // no line can slip by unnoticed (a line queued after it sets the mail
        // again), and none stays set after the socket won.
        if (ready.index == 1) continue;
        const ssize_t received = fib::io::read(member.socket(), buffer, sizeof buffer);
        if (received <= 0) return received < 0 ? errno : 0;
        idle_deadline = fib::deadline_after(options_.idle_timeout);
        lines.feed(std::string_view(buffer, static_cast<std::size_t>(received)),
                   [&](std::string_view line) {
                       room_.relay(member, line);
                       ++said;
                   });
    }
}

// The socket comes first: when both are ready, the client is read before the
// next batch is sent, so a busy room cannot silence it. No idle timeout, no
// timer: a timer per wait would cost a heap insertion for nothing. The time
// left cannot overflow: deadline_after never gives a deadline before the time
// it was set (a timeout of zero or less gives that time), so a deadline that
// has passed leaves a timeout of zero or a little less, which only looks.
fib::Ready ChatServer::wait_for_news(ChatMember& member, fib::Clock::time_point idle_deadline) {
    const fib::Source sources[] = {{member.socket(), POLLIN}, member.mail()};
    if (idle_deadline == fib::Clock::time_point::max()) return fib::wait_any(sources);
    return fib::wait_any(sources, idle_deadline - fib::Clock::now());
}
