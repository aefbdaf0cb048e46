// load_connections.cpp — lesson 4: echo_load's connections and the one epoll loop that drives them.
//
// Each connection is a small state machine (connecting, open, failed) with
// counters for the message it is sending and the one it is checking; no fiber,
// no thread, and nothing allocated per message. run_load is its entry point.
// The first options.conns connections are the active ones; the options.idle
// after them are only opened, held through phase 2, and checked at its end.
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <utility>
#include <vector>

#include "fib/tcp.hpp"
#include "fib/unique_fd.hpp"
#include "load_connections.hpp"
#include "message_pool.hpp"

namespace {

constexpr std::size_t kMaxConnecting = 64;
constexpr std::uint64_t kConnectPhaseNs = 10'000'000'000;
constexpr int kEventBatch = 256;

std::uint64_t now_ns() {
    timespec now{};
    ::clock_gettime(CLOCK_MONOTONIC, &now);
    return static_cast<std::uint64_t>(now.tv_sec) * 1'000'000'000 + now.tv_nsec;
}

// An epoll_wait timeout that does not end before `deadline`.
int milliseconds_until(std::uint64_t deadline) {
    const std::uint64_t now = now_ns();
    return now >= deadline ? 0 : static_cast<int>((deadline - now) / 1'000'000 + 1);
}

struct Connection {
    enum class State : std::uint8_t { connecting, open, failed };
    fib::UniqueFd socket;
    State state = State::connecting;   // until its connect ends, either way
    bool send_started = false;         // message next_send has had its first send()
    bool watching_writable = false;    // EPOLLOUT is on: a send() would block
    bool receive_mismatched = false;   // message next_receive has had a wrong byte
    std::uint32_t send_offset = 0;     // bytes of message next_send sent
    std::uint32_t receive_offset = 0;  // bytes of message next_receive echoed
    std::uint64_t next_send = 0;       // messages sent whole
    std::uint64_t next_receive = 0;    // messages echoed whole
};

class LoadClient {
public:
    // Room for 4M round trips is reserved up front: recording one allocates
    // nothing (and in a long run, now and then, grows the vector).
    explicit LoadClient(const Options& options)
        : options_(options),
          pool_(options.size),
          connections_(options.conns + options.idle),
          started_at_(options.conns * options.pipeline) {
        totals_.round_trip_ns.reserve(std::size_t{1} << 22);
    }

    // Phase 1. A connect that has not ended after kConnectPhaseNs counts as failed.
    void connect_all() {
        const auto server = fib::tcp::make_address(options_.host, options_.port);
        const std::uint64_t deadline = now_ns() + kConnectPhaseNs;
        std::uint32_t next = 0;
        std::size_t connecting = 0;
        while ((next < connections_.size() || connecting > 0) && now_ns() < deadline) {
            while (next < connections_.size() && connecting < kMaxConnecting)
                connecting += start_connect(next++, server);
            if (connecting == 0) continue;
            const int ready =
                ::epoll_wait(epoll_.get(), events_, kEventBatch, milliseconds_until(deadline));
            for (int i = 0; i < ready; ++i, --connecting) finish_connect(events_[i].data.u32);
        }
        for (Connection& connection : connections_)
            if (connection.state == Connection::State::connecting)
                drop(connection, totals_.connect_errors, "a connect", "timed out");
    }

    // Phase 2: round trips on every open active connection for `seconds`; the
    // idle ones are not even watched. Then it checks the idle ones and closes them all.
    Totals run_for(double seconds) {
        const std::uint64_t start = now_ns();
        const std::uint64_t deadline = start + static_cast<std::uint64_t>(seconds * 1e9);
        for (std::uint32_t index = 0; index < options_.conns; ++index) {
            if (connections_[index].state != Connection::State::open) continue;
            watch(index, EPOLL_CTL_ADD, false);
            send_more(index);
        }
        while (now_ns() < deadline) {
            const int ready =
                ::epoll_wait(epoll_.get(), events_, kEventBatch, milliseconds_until(deadline));
            for (int i = 0; i < ready; ++i) {
                const std::uint32_t index = events_[i].data.u32;
                if (events_[i].events & (EPOLLIN | EPOLLERR | EPOLLHUP)) receive(index);
                if (events_[i].events & EPOLLOUT) send_more(index);
            }
        }
        totals_.elapsed_seconds = static_cast<double>(now_ns() - start) / 1e9;
        check_idle();
        connections_.clear();
        return std::move(totals_);
    }

private:
    // Returns 1 if the connect is under way (watched for EPOLLOUT), 0 if it has ended.
    int start_connect(std::uint32_t index, const fib::tcp::Address& server) {
        Connection& connection = connections_[index];
        const int type = SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC;
        connection.socket.reset(::socket(server.storage.ss_family, type, 0));
        const int on = 1;  // each message goes out at once, never held back by Nagle
        if (!connection.socket ||
            ::setsockopt(connection.socket.get(), IPPROTO_TCP, TCP_NODELAY, &on, sizeof on) < 0 ||
            (::connect(connection.socket.get(), server.get(), server.length) < 0 &&
             errno != EINPROGRESS)) {
            drop(connection, totals_.connect_errors, "a connect", std::strerror(errno));
            return 0;
        }
        epoll_event event{.events = EPOLLOUT, .data = {.u32 = index}};
        ::epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, connection.socket.get(), &event);
        return 1;
    }

    // Unwatched again once connected: phase 2 watches it for reading.
    void finish_connect(std::uint32_t index) {
        Connection& connection = connections_[index];
        int error = 0;
        socklen_t length = sizeof error;
        ::getsockopt(connection.socket.get(), SOL_SOCKET, SO_ERROR, &error, &length);
        ::epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, connection.socket.get(), nullptr);
        connection.state = Connection::State::open;
        if (error) drop(connection, totals_.connect_errors, "a connect", std::strerror(error));
    }

    // An idle connection the server kept has nothing to read: recv() would block.
    // One that was closed, reset or sent bytes unasked counts as failed.
    void check_idle() {
        for (std::size_t index = options_.conns; index < connections_.size(); ++index) {
            Connection& connection = connections_[index];
            if (connection.state != Connection::State::open) continue;
            const ssize_t received = ::recv(connection.socket.get(), buffer_, 1, MSG_DONTWAIT);
            if (received < 0 && errno == EAGAIN) {
                ++totals_.idle_held;
                continue;
            }
            const char* failure = received < 0    ? std::strerror(errno)
                                  : received == 0 ? "closed by the server"
                                                  : "the server sent bytes unasked";
            drop(connection, totals_.failures, "an idle connection", failure);
        }
    }

    // Reads what the server echoed: never more than it owes, but a full buffer
    // when it owes nothing, so that extra bytes or an early end show as such.
    void receive(std::uint32_t index) {
        Connection& connection = connections_[index];
        if (connection.state != Connection::State::open) return;
        const std::uint64_t owed =
            (connection.next_send - connection.next_receive) * options_.size +
            connection.send_offset - connection.receive_offset;
        const std::size_t wanted = owed > 0 && owed < sizeof buffer_ ? owed : sizeof buffer_;
        const ssize_t received = ::recv(connection.socket.get(), buffer_, wanted, 0);
        if (received < 0 && errno == EAGAIN) return;
        const char* failure = received < 0    ? std::strerror(errno)
                              : received == 0 ? "early end of file"
                              : static_cast<std::uint64_t>(received) > owed
                                  ? "it echoed bytes never sent"
                                  : nullptr;
        if (failure) return drop(connection, totals_.failures, "a connection", failure);
        check(index, buffer_, static_cast<std::size_t>(received));
        send_more(index);
    }

    // Compares echoed bytes with the messages they should be, message by
    // message; a message's round trip ends with its last byte.
    void check(std::uint32_t index, const unsigned char* echoed, std::size_t length) {
        Connection& connection = connections_[index];
        while (length > 0) {
            const unsigned char* expected =
                pool_.message(index, connection.next_receive) + connection.receive_offset;
            const std::size_t part = std::min(length, options_.size - connection.receive_offset);
            if (std::memcmp(echoed, expected, part) != 0 && !connection.receive_mismatched) {
                connection.receive_mismatched = true;
                const auto at = std::mismatch(echoed, echoed + part, expected).first - echoed;
                if (totals_.mismatches == 0)
                    std::fprintf(stderr,
                                 "echo_load: connection %u, message %lu: byte %lu differs\n", index,
                                 connection.next_receive, connection.receive_offset + at);
            }
            echoed += part;
            length -= part;
            connection.receive_offset += static_cast<std::uint32_t>(part);
            if (connection.receive_offset < options_.size) continue;
            totals_.round_trip_ns.push_back(now_ns() - started_at(index, connection.next_receive));
            totals_.mismatches += connection.receive_mismatched;
            connection.receive_mismatched = false;
            connection.receive_offset = 0;
            ++connection.next_receive;
        }
    }

    // Sends until the message under way is out and `pipeline` are in flight,
    // or until send() would block: then EPOLLOUT is on until it would not.
    void send_more(std::uint32_t index) {
        Connection& connection = connections_[index];
        if (connection.state != Connection::State::open) return;
        while (connection.send_started ||
               connection.next_send - connection.next_receive < options_.pipeline) {
            if (!connection.send_started) started_at(index, connection.next_send) = now_ns();
            connection.send_started = true;
            const unsigned char* message = pool_.message(index, connection.next_send);
            const ssize_t sent = ::send(connection.socket.get(), message + connection.send_offset,
                                        options_.size - connection.send_offset, MSG_NOSIGNAL);
            if (sent < 0 && errno == EAGAIN) {
                if (!connection.watching_writable) watch(index, EPOLL_CTL_MOD, true);
                return;
            }
            if (sent < 0)
                return drop(connection, totals_.failures, "a connection", std::strerror(errno));
            connection.send_offset += static_cast<std::uint32_t>(sent);
            if (connection.send_offset < options_.size) continue;
            connection.send_offset = 0;
            connection.send_started = false;
            ++connection.next_send;
        }
        if (connection.watching_writable) watch(index, EPOLL_CTL_MOD, false);
    }

    // When the first send() of `message` was tried: one slot per message in flight.
    std::uint64_t& started_at(std::uint32_t index, std::uint64_t message) {
        return started_at_[index * options_.pipeline + message % options_.pipeline];
    }

    void watch(std::uint32_t index, int operation, bool writable) {
        Connection& connection = connections_[index];
        epoll_event event{.events = EPOLLIN | (writable ? EPOLLOUT : 0u), .data = {.u32 = index}};
        ::epoll_ctl(epoll_.get(), operation, connection.socket.get(), &event);
        connection.watching_writable = writable;
    }

    // Closes a failed connection and counts it; says why the first one failed.
    void drop(Connection& connection, std::uint64_t& counter, const char* what, const char* why) {
        if (counter++ == 0) std::fprintf(stderr, "echo_load: %s failed: %s\n", what, why);
        connection.socket.reset();
        connection.state = Connection::State::failed;
    }

    const Options options_;
    const MessagePool pool_;
    std::vector<Connection> connections_;
    std::vector<std::uint64_t> started_at_;
    fib::UniqueFd epoll_{::epoll_create1(EPOLL_CLOEXEC)};
    epoll_event events_[kEventBatch];
    unsigned char buffer_[64 * 1024];  // echoed bytes, checked as soon as they are read
    Totals totals_;
};

}  // namespace

Totals run_load(const Options& options) {
    auto load = std::make_unique<LoadClient>(options);  // its 64 KiB buffer is not for the stack
    load->connect_all();
    return load->run_for(options.seconds);
}
