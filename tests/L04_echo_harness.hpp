// L04_echo_harness.hpp — lesson 4: what the echo server's tests share. The server on a thread of
// its own (L04_server_thread.hpp), bounded polling for its state, random payloads, the fds open
// in this process, the kernel's socket buffer limits, and clients both ways: fibers
// (round_trip, read_back, NonReadingClient) and blocking sockets (blocking_echo).
// Included by tests/L04_echo_test.cpp, tests/L04_echo_hostile_test.cpp and
// tests/L04_echo_buffer_test.cpp.
#pragma once

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "../lessons/04-echo-server/echo_server.hpp"
#include "L04_server_thread.hpp"
#include "fib/condvar.hpp"
#include "fib/fiber.hpp"
#include "fib/io.hpp"
#include "fib/tcp.hpp"
#include "fib/unique_fd.hpp"
#include "fib/waiter.hpp"

namespace l04_echo {

using Bytes = std::vector<unsigned char>;
inline constexpr std::size_t kMiB = 1024 * 1024, kChunk = 64 * 1024;

// The echo server under test, on a thread of its own (see L04_server_thread.hpp).
struct EchoServerThread : ServerThread<EchoServer> {
    EchoServerThread() : ServerThread(EchoOptions{.port = 0, .quiet = true}) {}
};

// Bounded polling for state that lives in the server's thread: at most 20 s, then false.
template <class Predicate>
bool eventually(Predicate done) {
    for (int i = 0; i < 20000 && !done(); ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    return done();
}

// `size` random bytes, eight from each draw.
inline Bytes random_bytes(std::size_t size, std::mt19937_64& random) {
    Bytes bytes(size + 8);
    for (std::size_t at = 0; at < size; at += 8) {
        const std::uint64_t draw = random();
        std::memcpy(&bytes[at], &draw, sizeof draw);
    }
    bytes.resize(size);
    return bytes;
}

// The fds open in this process (not counting the one that lists them).
inline std::set<int> open_fds() {
    std::set<int> fds;
    DIR* dir = ::opendir("/proc/self/fd");
    while (const dirent* entry = dir ? ::readdir(dir) : nullptr)
        if (entry->d_name[0] != '.' && std::atoi(entry->d_name) != ::dirfd(dir))
            fds.insert(std::atoi(entry->d_name));
    if (dir) ::closedir(dir);
    return fds;
}

// From a fiber: reads the echo on `fd` until EOF, checking it byte for byte against `expected`.
// `slowly`: at most `piece` bytes per read, and a yield after each, so the other fibers run.
inline bool read_back(int fd, const Bytes& expected, bool slowly = false, std::size_t piece = kChunk) {
    Bytes buffer(piece);
    std::size_t have = 0;
    bool same = true;
    ssize_t n;
    while ((n = fib::io::read(fd, buffer.data(), buffer.size())) > 0) {
        const auto got = static_cast<std::size_t>(n);
        same = same && have + got <= expected.size() &&
               std::memcmp(buffer.data(), expected.data() + have, got) == 0;
        have += got;
        if (slowly) fib::this_fiber::yield();
    }
    return n == 0 && same && have == expected.size();
}

// A client fiber's conversation: connect; a writer fiber sends `payload`, then SHUT_WR, while
// this fiber reads the echo. Reading must go on during the writes, or a large payload fills
// both sides' buffers and client and server deadlock.
inline bool round_trip(std::uint16_t port, const Bytes& payload) {
    fib::UniqueFd socket = fib::tcp::connect("127.0.0.1", port);
    if (!socket) return false;
    const int fd = socket.get();
    fib::Fiber writer([fd, &payload] {
        for (std::size_t at = 0; at < payload.size(); at += kChunk)
            if (fib::io::send_all(fd, &payload[at], std::min(kChunk, payload.size() - at)) < 0)
                return;
        ::shutdown(fd, SHUT_WR);
    });
    const bool intact = read_back(fd, payload);
    writer.join();
    return intact;
}

// From a fiber: a client fiber per payload, all at once, each making a round_trip; how many
// got their payload back intact.
inline int round_trips_at_once(std::uint16_t port, const std::vector<Bytes>& payloads) {
    int intact = 0;
    std::vector<fib::Fiber> clients;
    for (const Bytes& payload : payloads)
        clients.emplace_back([&intact, port, &payload] { intact += round_trip(port, payload); });
    for (fib::Fiber& client : clients) client.join();
    return intact;
}

// The most the kernel grows a TCP socket's buffer to: "tcp_rmem" or "tcp_wmem", third field.
inline std::size_t kernel_buffer_max(const char* name) {
    std::ifstream file(std::string("/proc/sys/net/ipv4/") + name);
    std::size_t low = 0, initial = 0, most = 0;
    file >> low >> initial >> most;
    return most;
}

// From a fiber: a client that sends more than every buffer on its path can hold and reads
// nothing until the test calls read_back. The server's two buffers grow at most to tcp_rmem's
// and tcp_wmem's maximum; this client's own are set to 64 KiB. So its writer fiber stalls,
// and once it has, the server's fiber for this client has stopped reading it: it is parked
// sending an echo that the client does not take.
struct NonReadingClient {
    NonReadingClient(std::uint16_t port, std::mt19937_64& random)
        : payload(random_bytes(kernel_buffer_max("tcp_rmem") + kernel_buffer_max("tcp_wmem") + 4 * kMiB,
                               random)),
          socket(::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0)) {
        const int small = 64 * 1024;
        ::setsockopt(socket.get(), SOL_SOCKET, SO_SNDBUF, &small, sizeof small);
        ::setsockopt(socket.get(), SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
        const fib::tcp::Address where = fib::tcp::make_address("127.0.0.1", port);
        connected = fib::io::connect(socket.get(), where.get(), where.length) == 0;
        if (connected) writer = fib::Fiber([this] { write_all_then_shut(); });
    }
    ~NonReadingClient() {
        if (writer.joinable()) writer.join();
    }

    // Waits until the writer stalls (true) or has sent everything (false: the buffers held it).
    bool stalls() {
        changed.wait([&] { return stalled || done; });
        return stalled && !done;
    }
    // Reads the whole echo and checks every byte (see read_back), then joins the writer.
    bool reads_back(bool slowly = false, std::size_t piece = kChunk) {
        const bool intact = read_back(socket.get(), payload, slowly, piece);
        writer.join();
        return intact && done;
    }

    Bytes payload;
    fib::UniqueFd socket;
    bool connected = false, stalled = false, done = false;
    fib::CondVar changed;
    fib::Fiber writer;

private:
    void write_all_then_shut() {
        for (std::size_t at = 0; at < payload.size();) {
            const ssize_t n = ::send(socket.get(), &payload[at], std::min(kChunk, payload.size() - at),
                                     MSG_NOSIGNAL);
            if (n < 0 && errno != EAGAIN) return;
            at += n > 0 ? static_cast<std::size_t>(n) : 0;
            if (n > 0) continue;
            stalled = true;
            changed.notify_all();
            fib::io::wait(socket.get(), POLLOUT);
        }
        ::shutdown(socket.get(), SHUT_WR);
        done = true;
        changed.notify_all();
    }
};

// A blocking client socket for the tests without fibers. The timeouts only turn a hang (a
// broken server) into a failed call; no result depends on them.
inline fib::UniqueFd blocking_socket() {
    fib::UniqueFd socket(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    const timeval guard{60, 0};
    ::setsockopt(socket.get(), SOL_SOCKET, SO_RCVTIMEO, &guard, sizeof guard);
    ::setsockopt(socket.get(), SOL_SOCKET, SO_SNDTIMEO, &guard, sizeof guard);
    return socket;
}

inline bool connect_to(int socket, std::uint16_t port) {
    const fib::tcp::Address where = fib::tcp::make_address("127.0.0.1", port);
    return ::connect(socket, where.get(), where.length) == 0;
}

// Sends `size` bytes (a few KiB at most: they fit the buffers) and reads them back intact.
inline bool blocking_echo(int socket, std::size_t size) {
    Bytes sent(size), got(size);
    for (std::size_t i = 0; i < size; ++i) sent[i] = static_cast<unsigned char>(i * 131 + socket);
    if (::send(socket, sent.data(), size, MSG_NOSIGNAL) != static_cast<ssize_t>(size)) return false;
    for (std::size_t have = 0; have < size;) {
        const ssize_t n = ::recv(socket, &got[have], size - have, 0);
        if (n <= 0) return false;
        have += static_cast<std::size_t>(n);
    }
    return got == sent;
}

}  // namespace l04_echo
