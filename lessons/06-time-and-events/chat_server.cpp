// chat_server.cpp — lesson 6: the chat server: an acceptor fiber and one fiber per member.
#include "chat_server.hpp"

#include <poll.h>
#include <sys/socket.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <exception>
#include <optional>
#include <string_view>
#include <system_error>

#include "chat_lines.hpp"
#include "fib/fiber.hpp"
#include "fib/io.hpp"
#include "fib/tcp.hpp"
#include "fib/timer.hpp"
#include "fib/wait_any.hpp"

ChatServer::ChatServer(const ChatOptions& options)
    : options_(options),
      listener_(fib::tcp::listen(options.bind, options.port)),
      port_(fib::tcp::local_port(listener_.get())) {}

void ChatServer::serve(int stop_fd) {
    fib::Fiber acceptor({.name = "acceptor"}, [this] { accept_clients(); });
    fib::io::wait(stop_fd, POLLIN);
    // Stop accepting, as EchoServer does: shutdown() wakes the acceptor, whose
    // next accept() fails and sees stopping_.
    stopping_ = true;
    ::shutdown(listener_.get(), SHUT_RDWR);
    client_left_.notify_all();  // in case the acceptor is backing off
    acceptor.join();
    // Close every member's socket. A fiber parked in wait_any finds it
    // readable and reads 0; one blocked sending to a slow client gets EPIPE.
    // A client fiber that has not started yet sees stopping_.
    for (ChatMember* member = room_.first(); member; member = ChatRoom::next(member))
        ::shutdown(member->socket(), SHUT_RDWR);
    while (clients_connected() > 0) client_left_.wait();
    listener_.reset();
}

void ChatServer::accept_clients() {
    while (!stopping_) {
        sockaddr_storage peer{};
        socklen_t peer_length = sizeof peer;
        fib::UniqueFd socket(
            fib::io::accept(listener_.get(), reinterpret_cast<sockaddr*>(&peer), &peer_length));
        if (stopping_) return;
        if (!socket) {
            back_off_after(errno);
            continue;
        }
        // A batch of lines goes out as soon as it is sent: no Nagle.
        fib::tcp::set_no_delay(socket.get());
        const fib::tcp::AddressText address = fib::tcp::to_text(reinterpret_cast<sockaddr*>(&peer));
        try {
            fib::Fiber client(
                {.name = address.text},
                [this](fib::UniqueFd connection) { serve_client(std::move(connection)); },
                std::move(socket));
            client.detach();
        } catch (const std::exception& error) {
            // No stack for a new fiber (see vm.max_map_count): drop this client.
            std::fprintf(stderr, "chat_server: no fiber for %s: %s\n", address.text, error.what());
            continue;
        }
        served_.fetch_add(1, std::memory_order_relaxed);
        open_.fetch_add(1, std::memory_order_relaxed);
    }
}

// accept() failed. Out of fds (EMFILE, ENFILE) or buffers (ENOBUFS, ENOMEM),
// it fails before it even looks for a pending connection, so trying again at
// once would spin. Wait until a member leaves (freeing its fds) or 100 ms have
// passed, whichever is first; new clients wait in the listen backlog
// meanwhile. (EchoServer also refuses them with a spare fd; a chat room can
// keep them waiting.)
void ChatServer::back_off_after(int error) {
    std::fprintf(stderr, "chat_server: accept: %s\n", std::strerror(error));
    if (error == EMFILE || error == ENFILE || error == ENOBUFS || error == ENOMEM)
        fib::wait_for(client_left_, std::chrono::milliseconds(100));
}

// One client's fiber. Every started fiber with a socket is in the room, which
// serve() closes at the stop; a client accepted just before the stop may start
// after that, and must not join.
void ChatServer::serve_client(fib::UniqueFd socket) {
    if (!stopping_) {
        std::optional<ChatMember> member;
        try {
            member.emplace(++last_number_, socket.get());
        } catch (const std::system_error& error) {
            // No eventfd for its mail (out of fds): this client cannot chat.
            std::fprintf(stderr, "chat_server: %s: %s\n", fib::this_fiber::name(), error.what());
        }
        if (member) {
            room_.join(*member);
            chat_until_closed(*member);
            room_.leave(*member);
        }
    }
    socket.reset();  // closed before it stops being counted as open
    open_.fetch_sub(1, std::memory_order_relaxed);
    client_left_.notify_all();
}

// The member's loop: send what the room gave, then sleep until the client
// says something or the room has more to give, whichever comes first. Until
// the client closes, fails, or the server shuts the socket down.
void ChatServer::chat_until_closed(ChatMember& member) {
    if (!options_.quiet)
        std::fprintf(stderr, "chat_server: %s joined from %s; %zu in the room\n", member.name(),
                     fib::this_fiber::name(), room_.size());
    LineSplitter lines;
    std::uint64_t said = 0;
    int error = 0;
    // 4 KiB on the fiber's stack: a resident page per member (see EchoServer).
    char buffer[4096];
    for (;;) {
        if (!member.send_outbox()) {
            error = errno;
            break;
        }
        // The socket comes first: when both are ready, the client is read
        // before the next batch is sent, so a busy room cannot silence it.
        const fib::Ready ready =
            fib::wait_any({{member.socket(), POLLIN}, member.mail()});
        // Mail: reset it, then send. No line can slip by unnoticed: the send
        // empties the outbox, so a line queued after it sets the mail again.
        if (ready.index == 1) {
            member.mail().try_wait();
            continue;
        }
        const ssize_t received = fib::io::read(member.socket(), buffer, sizeof buffer);
        if (received <= 0) {
            error = received < 0 ? errno : 0;
            break;
        }
        lines.feed(std::string_view(buffer, static_cast<std::size_t>(received)),
                   [&](std::string_view line) {
                       room_.relay(member, line);
                       ++said;
                   });
    }
    if (!options_.quiet)
        std::fprintf(stderr, "chat_server: %s left (lines said: %llu, missed: %llu)%s%s\n",
                     member.name(), static_cast<unsigned long long>(said),
                     static_cast<unsigned long long>(member.lines_missed()), error ? ": " : "",
                     error ? std::strerror(error) : "");
}
