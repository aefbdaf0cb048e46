// chat_server.hpp — lesson 6: ChatServer, a line-based TCP chat room, one fiber per client.
//
// Used by the chat_server program (chat_main.cpp) and the tests, which run it
// on an ephemeral port:
//
//   fib::FiberManager manager;
//   fib::Waiter waiter;
//   ChatServer server({.port = 0});           // listens now; server.port() says where
//   server.serve(stop_fd);                    // until stop_fd turns readable
//
// Lesson 4's EchoServer, with a room in the middle (chat_room.hpp): each line
// a client sends goes to every other client at once. What the client fibers
// need that an echo did not: to wait for their socket *and* for lines from the
// room, whichever comes first (fib::wait_any on the socket and an Event). An
// idle room costs nothing: every fiber is parked in wait_any, and the thread
// sleeps in epoll_wait.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "chat_room.hpp"
#include "fib/condvar.hpp"
#include "fib/unique_fd.hpp"

struct ChatOptions {
    const char* bind = "127.0.0.1";  // numeric IPv4/IPv6; 0.0.0.0 only when asked
    std::uint16_t port = 8002;       // 0: any free port, see ChatServer::port()
    bool quiet = false;              // no join/leave log on stderr
};

class ChatServer {
public:
    // Binds and listens at once; throws std::system_error if it cannot.
    explicit ChatServer(const ChatOptions& options);

    std::uint16_t port() const { return port_; }

    // From a fiber of a thread with a FiberManager and a Waiter: accept and
    // chat until `stop_fd` turns readable (the program's signalfd, or a test's
    // pipe). Then stop accepting, close every client and return once each
    // client's fiber has ended. Call it once.
    void serve(int stop_fd);

    // Readable from any thread, e.g. a test's, while serve() runs.
    std::uint64_t clients_served() const { return served_.load(std::memory_order_relaxed); }
    std::size_t clients_connected() const { return open_.load(std::memory_order_relaxed); }
    std::uint64_t lines_relayed() const { return room_.lines_relayed(); }
    std::uint64_t lines_dropped() const { return room_.lines_dropped(); }

private:
    void accept_clients();
    void back_off_after(int error);
    void serve_client(fib::UniqueFd socket);
    void chat_until_closed(ChatMember& member);

    ChatOptions options_;
    fib::UniqueFd listener_;
    std::uint16_t port_;
    bool stopping_ = false;
    unsigned last_number_ = 0;  // users are numbered 1, 2, ... in the order they join
    ChatRoom room_;
    fib::CondVar client_left_;  // notified whenever a client's fiber ends
    std::atomic<std::uint64_t> served_{0};
    std::atomic<std::size_t> open_{0};
};
