// L06_chat_harness.hpp — lesson 6: what the chat server's tests share. The server on a thread of
// its own, and ChatClient, a client for fibers of the test's thread that sends bytes and reads
// whole lines; the bytes of the server's lines (welcome, notices, "user N: text"); a room filled
// in a known order. Included by tests/L06_chat_test.cpp and tests/L06_chat_slow_test.cpp.
#pragma once

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "../lessons/06-time-and-events/chat_server.hpp"
#include "L04_server_thread.hpp"
#include "fib/fiber_manager.hpp"
#include "fib/io.hpp"
#include "fib/tcp.hpp"
#include "fib/unique_fd.hpp"
#include "fib/wait_any.hpp"
#include "fib/waiter.hpp"

namespace l05_chat {

// The chat server under test, on a thread of its own (see L04_server_thread.hpp).
struct ChatServerThread : ServerThread<ChatServer> {
    ChatServerThread() : ServerThread(ChatOptions{.port = 0, .quiet = true}) {}
    explicit ChatServerThread(const ChatOptions& options) : ServerThread(options) {}
};

// The bytes the server sends.
inline std::string welcome(int user, int in_room) {
    return "*** you are user " + std::to_string(user) + "; " + std::to_string(in_room) +
           " in the room\n";
}
inline std::string joined(int user) { return "*** user " + std::to_string(user) + " joined\n"; }
inline std::string left(int user) { return "*** user " + std::to_string(user) + " left\n"; }
inline std::string said(int user, std::string_view text) {
    return "user " + std::to_string(user) + ": " + std::string(text) + "\n";
}
inline std::string dropped_notice(std::uint64_t count) {
    return "*** " + std::to_string(count) + (count == 1 ? " line" : " lines") +
           " dropped: you read too slowly\n";
}
// How many lines `line` says were dropped, if it is a dropped_notice(); else 0.
inline std::uint64_t dropped_in(const std::string& line) {
    unsigned long long count = 0;
    if (std::sscanf(line.c_str(), "*** %llu ", &count) != 1 || count == 0) return 0;
    return line == dropped_notice(count) ? count : 0;
}

// A chat client, used from fibers of the test's thread. The timeout on reads only turns a hang
// (a broken server) into a failed read; no result depends on it.
class ChatClient {
public:
    explicit ChatClient(std::uint16_t port) : socket_(fib::tcp::connect("127.0.0.1", port)) {}
    // With SO_RCVBUF set before connecting, so the window the server sees is small from the start.
    ChatClient(std::uint16_t port, int receive_buffer)
        : socket_(::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0)) {
        ::setsockopt(socket_.get(), SOL_SOCKET, SO_RCVBUF, &receive_buffer, sizeof receive_buffer);
        const fib::tcp::Address where = fib::tcp::make_address("127.0.0.1", port);
        if (fib::io::connect(socket_.get(), where.get(), where.length) != 0) socket_.reset();
    }

    bool connected() const { return bool(socket_); }
    int fd() const { return socket_.get(); }
    void close() { socket_.reset(); }

    bool send(std::string_view bytes) {
        return fib::io::send_all(socket_.get(), bytes.data(), bytes.size()) ==
               static_cast<ssize_t>(bytes.size());
    }
    bool say(std::string_view text) { return send(std::string(text) + "\n"); }

    // The next line, newline included; nothing at end of stream, on an error or after 20 s
    // without a byte.
    std::optional<std::string> read_line() {
        for (;;) {
            const std::size_t newline = buffered_.find('\n');
            if (newline != std::string::npos) {
                std::string line = buffered_.substr(0, newline + 1);
                buffered_.erase(0, newline + 1);
                return line;
            }
            char chunk[16 * 1024];
            const ssize_t n =
                fib::io::read(socket_.get(), chunk, sizeof chunk, std::chrono::seconds(20));
            if (n <= 0) return std::nullopt;
            buffered_.append(chunk, static_cast<std::size_t>(n));
        }
    }

    // Reads and drops what comes until the server closes the connection: true at its end of
    // stream or reset, false on another error or 20 s of silence.
    bool read_until_closed() {
        char chunk[64 * 1024];
        for (int reads = 0; reads < 100000; ++reads) {
            const ssize_t n =
                fib::io::read(socket_.get(), chunk, sizeof chunk, std::chrono::seconds(20));
            if (n == 0) return true;
            if (n < 0) return errno == ECONNRESET;
        }
        return false;
    }

    // Nothing read but not yet returned, and nothing waiting in the socket.
    bool nothing_pending() {
        char byte;
        return buffered_.empty() && ::recv(socket_.get(), &byte, 1, MSG_DONTWAIT | MSG_PEEK) < 0 &&
               errno == EAGAIN;
    }

private:
    fib::UniqueFd socket_;
    std::string buffered_;  // read, not yet returned as a line
};

// From a fiber: connects `count` clients one after the other, so they are users 1 to `count`;
// each reads its welcome, then the notices of those who joined after it.
inline std::vector<ChatClient> fill_room(std::uint16_t port, int count) {
    std::vector<ChatClient> clients;
    for (int user = 1; user <= count; ++user) {
        clients.emplace_back(port);
        EXPECT_EQ(clients.back().read_line(), welcome(user, user));
    }
    for (int user = 1; user <= count; ++user)
        for (int later = user + 1; later <= count; ++later)
            EXPECT_EQ(clients[user - 1].read_line(), joined(later));
    return clients;
}

// Line `number` of a long run: 4,000 bytes, its number, then a letter that changes with it.
inline std::string long_text(int number) {
    std::string text = std::to_string(number) + " ";
    text.resize(4000, static_cast<char>('a' + number % 26));
    return text;
}

}  // namespace l05_chat
