// L13_client.hpp — lesson 13: what the server tests share: a KvServer on a thread of its own with a
// door for posted checks, a RESP client over a loopback socket that reads one complete reply at a
// time with a bounded wait, and the bytes of requests and replies.
// Included by tests/L13_server_test.cpp and tests/L13_blocking_test.cpp.
#pragma once

#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <future>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "../lessons/13-redis/kv_server.hpp"
#include "L04_echo_harness.hpp"
#include "L04_server_thread.hpp"
#include "fib/fiber_manager.hpp"
#include "fib/inbox.hpp"
#include "fib/scope.hpp"

namespace l13 {

using Clock = std::chrono::steady_clock;

// How long a client waits for a reply, or a check for its condition, before it calls the test
// failed. Only a broken server ever waits this long; no result depends on it.
inline constexpr std::chrono::seconds kPatience{10};

// ---- Bytes ----------------------------------------------------------------------------------

inline std::string bulk(std::string_view bytes) {
    return "$" + std::to_string(bytes.size()) + "\r\n" + std::string(bytes) + "\r\n";
}
inline std::string integer(long long number) { return ":" + std::to_string(number) + "\r\n"; }
inline std::string error(std::string_view message) { return "-" + std::string(message) + "\r\n"; }
inline std::string array(std::initializer_list<std::string_view> elements) {
    std::string bytes = "*" + std::to_string(elements.size()) + "\r\n";
    for (std::string_view element : elements) bytes += element;
    return bytes;
}

// A request as redis-cli sends it: an array of bulk strings.
inline std::string request(const std::vector<std::string>& arguments) {
    std::string bytes = "*" + std::to_string(arguments.size()) + "\r\n";
    for (const std::string& argument : arguments) bytes += bulk(argument);
    return bytes;
}

// Where the complete reply that starts at `at` ends, or nothing while it is incomplete. A reply
// is a line (+ - :), a bulk (a length line and that many bytes and \r\n), or an array (a count
// line and that many replies). Anything else ends at its line, so that a test sees it.
inline std::optional<std::size_t> reply_end(std::string_view bytes, std::size_t at = 0) {
    const std::size_t line_end = bytes.find("\r\n", at);
    if (at >= bytes.size() || line_end == std::string_view::npos) return std::nullopt;
    const char kind = bytes[at];
    const std::string header(bytes.substr(at + 1, line_end - at - 1));
    const long long count = kind == '$' || kind == '*' ? std::atoll(header.c_str()) : 0;
    std::size_t end = line_end + 2;
    if (kind == '$' && count >= 0) {
        end += static_cast<std::size_t>(count) + 2;
        return end <= bytes.size() ? std::optional(end) : std::nullopt;
    }
    for (long long i = 0; kind == '*' && i < count; ++i) {
        const auto element_end = reply_end(bytes, end);
        if (!element_end) return std::nullopt;
        end = *element_end;
    }
    return end;
}

// ---- The client -----------------------------------------------------------------------------

// A client on a non-blocking loopback socket, used from the test's thread (no fibers). What the
// server sends is kept in `received` until reply() takes it, one complete reply at a time.
class Client {
public:
    // `receive_buffer`: the socket's SO_RCVBUF, set before the connect (0: the kernel's default).
    explicit Client(std::uint16_t port, int receive_buffer = 0)
        : socket_(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) {
        if (receive_buffer)
            ::setsockopt(socket_.get(), SOL_SOCKET, SO_RCVBUF, &receive_buffer, sizeof receive_buffer);
        EXPECT_TRUE(l04_echo::connect_to(socket_.get(), port)) << "cannot connect to port " << port;
        ::fcntl(socket_.get(), F_SETFL, O_NONBLOCK);
    }

    int fd() const { return socket_.get(); }
    void no_delay() {
        const int on = 1;
        ::setsockopt(socket_.get(), IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
    }

    // Sends all of `bytes`, taking what the server sends meanwhile into `received` (a client
    // that only wrote could deadlock with a server whose replies fill the buffers). False if
    // the server closed or reset the connection, or the patience ran out.
    bool send(std::string_view bytes) {
        const auto deadline = Clock::now() + kPatience;
        while (!bytes.empty()) {
            const ssize_t n = ::send(socket_.get(), bytes.data(), bytes.size(), MSG_NOSIGNAL);
            if (n > 0) bytes.remove_prefix(static_cast<std::size_t>(n));
            if (n < 0 && errno != EAGAIN && errno != EINTR) return false;
            if (n > 0) continue;
            pollfd ready{socket_.get(), POLLIN | POLLOUT, 0};
            if (::poll(&ready, 1, remaining_ms(deadline)) <= 0) return false;
            if ((ready.revents & POLLIN) && receive_some() <= 0) return false;
        }
        return true;
    }

    // The next complete reply's bytes; "(closed)" if the server closed the connection first,
    // "(timed out)" if nothing complete came within the patience (neither is RESP).
    std::string reply() {
        const auto deadline = Clock::now() + kPatience;
        for (;;) {
            if (const auto end = reply_end(received)) {
                std::string one = received.substr(0, *end);
                received.erase(0, *end);
                return one;
            }
            if (!wait_readable(deadline)) return "(timed out)";
            if (receive_some() <= 0) return "(closed)";
        }
    }

    // Sends a request made of `arguments` and returns its reply.
    std::string command(const std::vector<std::string>& arguments) {
        if (!send(request(arguments))) return "(closed)";
        return reply();
    }

    // One recv() into `received`, waiting for it at most the patience: how many bytes came,
    // 0 at the end of the stream, -1 on a reset or when nothing came.
    ssize_t receive_some(std::size_t most = 64 * 1024) {
        if (!wait_readable(Clock::now() + kPatience)) return -1;
        std::string chunk(most, '\0');
        const ssize_t n = ::recv(socket_.get(), chunk.data(), most, 0);
        if (n > 0) received.append(chunk, 0, static_cast<std::size_t>(n));
        return n;
    }

    // Reads until the server closes the connection (true), keeping what came before in
    // `received`; false if it is still open when the patience runs out.
    bool closed_by_server() {
        for (;;) {
            const ssize_t n = receive_some();
            if (n == 0 || (n < 0 && errno == ECONNRESET)) return true;
            if (n < 0) return false;
        }
    }

    // Whether any byte has come that reply() has not taken, without waiting.
    bool anything_arrived() {
        pollfd ready{socket_.get(), POLLIN, 0};
        return !received.empty() || ::poll(&ready, 1, 0) > 0;
    }

    std::string received;  // bytes from the server not yet taken by reply()

private:
    static int remaining_ms(Clock::time_point deadline) {
        return static_cast<int>(std::max<long long>(
            0, std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count()));
    }
    bool wait_readable(Clock::time_point deadline) {
        pollfd ready{socket_.get(), POLLIN, 0};
        return ::poll(&ready, 1, remaining_ms(deadline)) > 0;
    }

    fib::UniqueFd socket_;
};

// The server's end of `client`'s connection: the socket of this process whose peer is the
// client's address. -1 if there is none (yet). The test reads its queues, never its bytes, and
// only on the server's thread (on_server): ThreadSanitizer counts an fd's use as an access.
inline int server_end_of(const Client& client) {
    sockaddr_in mine{}, peer{};
    socklen_t length = sizeof mine;
    ::getsockname(client.fd(), reinterpret_cast<sockaddr*>(&mine), &length);
    for (int fd : l04_echo::open_fds()) {
        struct stat status{};
        length = sizeof peer;
        if (fd == client.fd() || ::fstat(fd, &status) != 0 || !S_ISSOCK(status.st_mode)) continue;
        if (::getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &length) == 0 && peer.sin_family == AF_INET &&
            peer.sin_port == mine.sin_port)
            return fd;
    }
    return -1;
}

// Bytes in a socket's receive queue (FIONREAD) and its send queue, sent or not but not yet
// acknowledged (SIOCOUTQ, as TIOCOUTQ).
inline int unread_bytes(int fd) {
    int bytes = 0;
    return ::ioctl(fd, FIONREAD, &bytes) == 0 ? bytes : -1;
}
inline int unsent_bytes(int fd) {
    int bytes = 0;
    return ::ioctl(fd, TIOCOUTQ, &bytes) == 0 ? bytes : -1;
}

// Bounded polling for a condition, looking every 100 µs at first: waiting for a server to take
// one step happens a thousand times in some tests. False if it still fails after the patience.
template <class Predicate>
bool wait_until(Predicate done) {
    const auto deadline = Clock::now() + kPatience;
    while (!done()) {
        if (Clock::now() > deadline) return false;
        std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
    return true;
}

// ---- The server -----------------------------------------------------------------------------

// A KvServer with a door for the test's thread: on_server(check) runs `check` on the server's
// thread, on a fiber of its own between the clients' turns, and returns what it returned. That
// is how a test reads what only the server's thread may read (BlockedLists::waiters(), the
// keyspace) without adding a lock or an atomic to the lesson. The inbox is opened by the
// constructor, which ServerThread runs on the server's thread before it lets the test post, and
// released at the end of serve(), on that thread too, as an Event must be (inbox.hpp).
class ProbedKvServer {
public:
    explicit ProbedKvServer(const KvOptions& options) : server(options, store) {}

    std::uint16_t port() const { return server.port(); }

    void serve(int stop_fd) {
        fib::scope({.name = "probed kv_server"}, [&](fib::Scope& scope) {
            scope.spawn({.name = "probes"}, [this] { run_probes(); });
            server.serve(stop_fd);
            scope.cancel();
        });
        probes_.close();
        probes_.release();
    }

    template <class Check>
    auto on_server(Check check) -> decltype(check()) {
        using Result = decltype(check());
        std::promise<Result> result;
        std::future<Result> future = result.get_future();
        std::function<void()> probe = [&] {
            if constexpr (std::is_void_v<Result>) {
                check();
                result.set_value();
            } else {
                result.set_value(check());
            }
        };
        if (!probes_.post(std::move(probe)) || future.wait_for(kPatience) != std::future_status::ready) {
            ADD_FAILURE() << "the server's thread did not run a posted check";
            std::abort();  // `result` may still be set by the server's thread: nothing can go on
        }
        return future.get();
    }

    kv::Store store;  // the server's keys, which are its caller's
    KvServer server;

private:
    void run_probes() {
        std::deque<std::function<void()>> batch;
        do {
            probes_.take_all(batch);
            for (std::function<void()>& probe : batch) probe();
            batch.clear();
        } while (probes_.wait());
    }

    fib::Inbox<std::function<void()>> probes_;
};

// A server with small limits unless a test gives others, on an ephemeral port, quiet.
inline KvOptions test_options(KvLimits limits = {}) {
    return KvOptions{.port = 0, .quiet = true, .limits = limits};
}

struct KvServerThread : ServerThread<ProbedKvServer> {
    explicit KvServerThread(const KvOptions& options = test_options()) : ServerThread(options) {}
    // Runs `check` on the server's thread (see ProbedKvServer).
    template <class Check>
    auto on_server(Check check) {
        return server->on_server(check);
    }
    // Waits on the server's thread until `condition` holds, yielding to its fibers between looks
    // (the Waiter's among them, which takes in what the kernel has): one round trip between the
    // threads, however many steps the server takes. False after half the patience.
    template <class Condition>
    bool eventually_on_server(Condition condition) {
        return on_server([&] {
            const auto deadline = Clock::now() + kPatience / 2;
            while (!condition()) {
                if (Clock::now() > deadline) return false;
                fib::this_fiber::yield();
            }
            return true;
        });
    }
    kv::Store& store() { return server->store; }
    const KvCounts& counts() const { return live->server.counts(); }
};

}  // namespace l13
