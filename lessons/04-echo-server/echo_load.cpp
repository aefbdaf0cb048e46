// echo_load.cpp — lesson 4: the load client of make bench-echo: many echo connections, one thread.
//
//   build/echo_load --port N [--conns N] [--size BYTES] [--seconds S] [--pipeline K]
//
// Phase 1 opens every connection (non-blocking connects, at most 64 under way
// at once). Phase 2 lasts S seconds: each connection sends a message, waits for
// its whole echo and sends the next (with --pipeline K, up to K in flight).
// Every echoed byte is checked and every round trip timed. One epoll loop
// drives it all; it uses no fibers, so it loads echo_server and echo_threads
// alike, and it allocates nothing per message.
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>

#include <algorithm>
#include <cerrno>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string_view>
#include <utility>
#include <vector>

#include "fib/tcp.hpp"
#include "fib/unique_fd.hpp"

namespace {

constexpr const char* kUsage =
    "usage: echo_load --port N [--host ADDR] [--conns N] [--size BYTES] [--seconds S]\n"
    "                 [--pipeline K] [--help]\n"
    "\n"
    "Opens N connections to an echo server (default 100), then for S seconds (default 2,\n"
    "up to 60) each sends BYTES random bytes (default 64, up to 1 MiB) and waits for their\n"
    "echo, checking every byte; with --pipeline K (1 to 64), K messages may be in flight.\n"
    "--host is 127.0.0.1 (default) or ::1: this tool loads this machine only.\n"
    "Prints a line for people and a 'RESULT name=echo ...' line for scripts.\n"
    "Exit status: 0 ok, 1 an echoed byte differed, 2 usage, 3 no round trip completed.\n";

constexpr std::size_t kPoolBytes = 4 << 20;
constexpr std::size_t kMaxConnecting = 64;
constexpr std::uint64_t kConnectPhaseNs = 10'000'000'000;
constexpr int kEventBatch = 256;

struct Options {
    const char* host = "127.0.0.1";
    std::uint64_t port = 8001, conns = 100, size = 64, pipeline = 1;
    double seconds = 2;
};

[[noreturn]] __attribute__((format(printf, 1, 2))) void usage_error(const char* format, ...) {
    std::va_list arguments;
    va_start(arguments, format);
    std::fprintf(stderr, "echo_load: ");
    std::vfprintf(stderr, format, arguments);
    va_end(arguments);
    std::fprintf(stderr, "\n\n%s", kUsage);
    std::exit(2);
}

Options parse(int argc, char** argv) {
    Options options;
    for (int i = 1; i < argc; ++i) {
        const char* flag = argv[i];
        auto value = [&]() -> const char* {
            if (i + 1 >= argc) usage_error("%s needs a value", flag);
            return argv[++i];
        };
        auto number = [&](std::uint64_t low, std::uint64_t high) -> std::uint64_t {
            const char* text = value();
            char* end = nullptr;
            const unsigned long long number = std::strtoull(text, &end, 10);
            if (*text < '0' || *text > '9' || *end != '\0' || number < low || number > high)
                usage_error("%s wants a whole number from %lu to %lu, not '%s'", flag, low, high,
                            text);
            return number;
        };
        const std::string_view name = flag;
        if (name == "--help") {
            std::fputs(kUsage, stdout);
            std::exit(0);
        } else if (name == "--host") {
            options.host = value();
        } else if (name == "--port") {
            options.port = number(1, 65535);
        } else if (name == "--conns") {
            options.conns = number(1, 1'000'000);
        } else if (name == "--size") {
            options.size = number(1, 1 << 20);
        } else if (name == "--pipeline") {
            options.pipeline = number(1, 64);
        } else if (name == "--seconds") {
            const char* text = value();
            char* end = nullptr;
            options.seconds = std::strtod(text, &end);
            if (*end != '\0' || !(options.seconds > 0 && options.seconds <= 60))
                usage_error("--seconds wants a number above 0 and up to 60, not '%s'", text);
        } else {
            usage_error("unknown option '%s'", flag);
        }
    }
    const std::string_view host = options.host;
    if (host != "127.0.0.1" && host != "::1")
        usage_error("refusing --host %s: only 127.0.0.1 or ::1 (loopback)", options.host);
    return options;
}

// Each connection is an fd: raise the soft limit to the hard one, or say why not.
void raise_fd_limit(std::uint64_t conns) {
    rlimit limit{};
    ::getrlimit(RLIMIT_NOFILE, &limit);
    if (conns + 16 > limit.rlim_max) {
        std::fprintf(stderr, "echo_load: %lu connections need %lu fds; the hard limit is %lu\n",
                     conns, conns + 16, limit.rlim_max);
        std::exit(2);
    }
    limit.rlim_cur = limit.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &limit);
}

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

// splitmix64's finalizer: spreads (connection, message) pairs over the pool.
std::uint64_t mix(std::uint64_t value) {
    value = (value ^ (value >> 30)) * 0xbf58476d1ce4e5b9;
    value = (value ^ (value >> 27)) * 0x94d049bb133111eb;
    return value ^ (value >> 31);
}

// Message k of connection c is a window of one pool of random bytes, at an
// offset hashed from (c, k). Sender and checker compute the same window, so
// nothing is stored per message, and a byte from another message or another
// connection's stream (almost surely) differs from the one expected.
class MessagePool {
public:
    explicit MessagePool(std::size_t message_size) : starts_(kPoolBytes - message_size + 1) {
        std::mt19937_64 random(20240501);
        for (std::size_t at = 0; at < kPoolBytes; at += 8) {
            const std::uint64_t word = random();
            std::memcpy(&bytes_[at], &word, 8);
        }
    }
    const unsigned char* message(std::uint32_t connection, std::uint64_t index) const {
        return bytes_.data() + mix(mix(connection) + index) % starts_;
    }

private:
    std::size_t starts_;  // offsets a message can start at
    std::vector<unsigned char> bytes_ = std::vector<unsigned char>(kPoolBytes);
};

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

// What main reports.
struct Totals {
    std::uint64_t connect_errors = 0, failures = 0, mismatches = 0;
    double elapsed_seconds = 0;
    std::vector<std::uint64_t> round_trip_ns;
};

class LoadClient {
public:
    // Room for 4M round trips is reserved up front: recording one allocates
    // nothing (and in a long run, now and then, grows the vector).
    explicit LoadClient(const Options& options)
        : options_(options),
          pool_(options.size),
          connections_(options.conns),
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

    // Phase 2: round trips on every open connection for `seconds`; then close them all.
    Totals run_for(double seconds) {
        const std::uint64_t start = now_ns();
        const std::uint64_t deadline = start + static_cast<std::uint64_t>(seconds * 1e9);
        for (std::uint32_t index = 0; index < connections_.size(); ++index) {
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

// The round trip below which `fraction` of them took, in microseconds.
double percentile_us(std::vector<std::uint64_t>& round_trips, double fraction) {
    if (round_trips.empty()) return 0;
    const auto rank =
        round_trips.begin() +
        static_cast<std::ptrdiff_t>(fraction * static_cast<double>(round_trips.size() - 1));
    std::nth_element(round_trips.begin(), rank, round_trips.end());
    return static_cast<double>(*rank) / 1e3;
}

}  // namespace

int main(int argc, char** argv) {
    const Options options = parse(argc, argv);
    raise_fd_limit(options.conns);
    auto load = std::make_unique<LoadClient>(options);  // its 64 KiB buffer is not for the stack
    load->connect_all();
    Totals totals = load->run_for(options.seconds);
    const std::uint64_t messages = totals.round_trip_ns.size();
    const double rps = static_cast<double>(messages) / totals.elapsed_seconds;
    const double p50_us = percentile_us(totals.round_trip_ns, 0.50);
    const double p99_us = percentile_us(totals.round_trip_ns, 0.99);
    const double max_us = percentile_us(totals.round_trip_ns, 1.0);
    std::printf(
        "echo_load: %lu connections x %lu bytes, pipeline %lu: %lu round trips in %.2f s = "
        "%.0f/s; p50 %.1f us, p99 %.1f us, max %.1f us\n",
        options.conns, options.size, options.pipeline, messages, totals.elapsed_seconds, rps,
        p50_us, p99_us, max_us);
    std::printf(
        "RESULT name=echo conns=%lu size=%lu pipeline=%lu seconds=%g messages=%lu rps=%.0f "
        "p50_us=%.1f p99_us=%.1f max_us=%.1f connect_errors=%lu errors=%lu mismatches=%lu\n",
        options.conns, options.size, options.pipeline, options.seconds, messages, rps, p50_us,
        p99_us, max_us, totals.connect_errors, totals.failures, totals.mismatches);
    if (totals.mismatches > 0) return 1;
    return messages == 0 ? 3 : 0;
}
