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
// A FiberServer (fiber_server.hpp) with a room in the middle (chat_room.hpp):
// each line a client sends goes to every other client at once. What the
// client fibers need that an echo did not: to wait for their socket *and* for
// lines from the room, whichever comes first (fib::wait_any on the socket and
// an Event). An idle room costs nothing: every fiber is parked in wait_any,
// and the thread sleeps in epoll_wait.
//
// Two deadlines bound what a client can hold. A member whose client takes no
// batch of lines within write_timeout has stopped reading: it is closed, and
// its fiber, its fds and the socket's buffers are freed (its outbox was
// already bounded). With idle_timeout set, a member that says nothing for that
// long is closed too.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

#include "chat_room.hpp"
#include "fib/wait_any.hpp"
#include "fiber_server.hpp"

struct ChatOptions {
    const char* bind = "127.0.0.1";  // numeric IPv4/IPv6; 0.0.0.0 only when asked
    std::uint16_t port = 8002;       // 0: any free port, see ChatServer::port()
    bool quiet = false;              // no join/leave log on stderr
    fib::Clock::duration idle_timeout = fib::Clock::duration::max();  // max: never
    fib::Clock::duration write_timeout = std::chrono::seconds(30);    // for each batch sent
    bool eventfd_mail = false;                                        // see ChatMember
};

class ChatServer : public FiberServer {
public:
    // Binds and listens at once; throws std::system_error if it cannot.
    explicit ChatServer(const ChatOptions& options);

    // Readable from any thread, e.g. a test's, while serve() runs.
    std::uint64_t lines_relayed() const { return room_.lines_relayed(); }
    std::uint64_t lines_dropped() const { return room_.lines_dropped(); }
    std::uint64_t idle_closed() const { return idle_closed_.load(std::memory_order_relaxed); }
    std::uint64_t slow_closed() const { return slow_closed_.load(std::memory_order_relaxed); }

protected:
    void serve_client(int socket) override;

private:
    int chat_until_closed(ChatMember& member, std::uint64_t& said);
    fib::Ready wait_for_news(ChatMember& member, fib::Clock::time_point idle_deadline);

    ChatOptions options_;
    unsigned last_number_ = 0;  // users are numbered 1, 2, ... in the order they join
    ChatRoom room_;
    std::atomic<std::uint64_t> idle_closed_{0};
    std::atomic<std::uint64_t> slow_closed_{0};
};
