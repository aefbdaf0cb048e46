// L04_io_test.cpp — lesson 4: the fiber-aware I/O helpers and TCP set-up. write_all survives
// partial writes; send_all to a closed peer fails with EPIPE instead of a SIGPIPE; read reports
// EOF and a reset; listen, connect and accept over loopback (non-blocking, close-on-exec sockets,
// refused connections, an address in use, bad addresses); UniqueFd owns and closes its fd.
#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <system_error>
#include <vector>

#include "fib/fiber.hpp"
#include "fib/io.hpp"
#include "fib/tcp.hpp"
#include "fib/unique_fd.hpp"
#include "fib/waiter.hpp"

namespace {

// True when `fd` is not open: fcntl fails with EBADF.
bool is_closed(int fd) {
    errno = 0;
    return ::fcntl(fd, F_GETFD) == -1 && errno == EBADF;
}

unsigned char pattern_byte(std::size_t i) { return static_cast<unsigned char>(i * 7 + i / 251); }

// 1 MiB through a 4 KiB pipe: write_all goes on after each partial write and each EAGAIN, the
// reader takes 1000-byte chunks; every byte arrives, in order.
TEST(L04_Io, WriteAllThroughASmallPipeDeliversEveryByteInOrder) {
    fib::FiberManager manager;
    fib::Waiter waiter;
    int fds[2];
    ASSERT_EQ(::pipe2(fds, O_NONBLOCK | O_CLOEXEC), 0);
    fib::UniqueFd read_end(fds[0]), write_end(fds[1]);
    ASSERT_EQ(::fcntl(write_end.get(), F_SETPIPE_SZ, 4096), 4096);
    constexpr std::size_t kSize = 1 << 20;
    std::vector<unsigned char> sent(kSize);
    for (std::size_t i = 0; i < kSize; ++i) sent[i] = pattern_byte(i);
    ssize_t written = 0;
    fib::Fiber writer([&] {
        written = fib::io::write_all(write_end.get(), sent.data(), sent.size());
        write_end.reset();  // the reader's EOF
    });
    std::vector<unsigned char> received;
    int reads = 0;
    fib::Fiber reader([&] {
        unsigned char chunk[1000];
        for (std::size_t i = 0; i <= kSize; ++i) {
            const ssize_t n = fib::io::read(read_end.get(), chunk, sizeof chunk);
            ASSERT_GE(n, 0);
            if (n == 0) return;
            ++reads;
            received.insert(received.end(), chunk, chunk + n);
        }
    });
    writer.join();
    reader.join();
    EXPECT_EQ(written, static_cast<ssize_t>(kSize));
    ASSERT_EQ(received.size(), kSize);
    std::size_t mismatches = 0;
    for (std::size_t i = 0; i < kSize; ++i) mismatches += received[i] != sent[i];
    EXPECT_EQ(mismatches, 0u);
    // At most 4096 bytes per read, so at least 256 of them.
    EXPECT_GE(reads, 256);
}

// Run in a child so that a SIGPIPE, if it came, would kill only the child. SIGPIPE keeps its
// default action: MSG_NOSIGNAL alone must save the process.
void send_to_a_closed_peer_and_report() {
    fib::FiberManager manager;
    fib::Waiter waiter;
    int fds[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, fds) != 0)
        std::exit(2);
    fib::UniqueFd mine(fds[0]), peer(fds[1]);
    peer.reset();
    const char data[] = "hello";
    const ssize_t result = fib::io::send_all(mine.get(), data, sizeof data);
    const int error = errno;
    std::fprintf(stderr, "send_all returned %zd, errno %d\n", result, error);
    std::exit(0);
}

TEST(L04_Io, SendAllToAClosedPeerGivesEpipeWithoutSigpipe) {
    EXPECT_EXIT(send_to_a_closed_peer_and_report(), testing::ExitedWithCode(0),
                "send_all returned -1, errno " + std::to_string(EPIPE) + "\n");
}

// A loopback connection made in two fibers: "server" accepts, "client" connects. `server_does`
// gets the accepted socket, `client_does` the connected one.
template <class Server, class Client>
void over_loopback(Server server_does, Client client_does) {
    fib::FiberManager manager;
    fib::Waiter waiter;
    fib::UniqueFd listener = fib::tcp::listen("127.0.0.1", 0);
    const std::uint16_t port = fib::tcp::local_port(listener.get());
    fib::Fiber server({.name = "server"}, [&] {
        fib::UniqueFd accepted(fib::io::accept(listener.get(), nullptr, nullptr));
        ASSERT_TRUE(accepted);
        server_does(accepted);
    });
    fib::Fiber client({.name = "client"}, [&] {
        fib::UniqueFd connected = fib::tcp::connect("127.0.0.1", port);
        ASSERT_TRUE(connected) << "errno " << errno;
        client_does(connected);
    });
    server.join();
    client.join();
}

TEST(L04_Io, ReadReturnsZeroAtEof) {
    ssize_t first = -2, second = -2;
    char got[8] = {};
    over_loopback(
        [](fib::UniqueFd& accepted) {
            EXPECT_EQ(fib::io::send_all(accepted.get(), "bye", 3), 3);
            accepted.reset();
        },
        [&](fib::UniqueFd& connected) {
            // Bounded: each read takes at least one byte until EOF.
            std::size_t have = 0;
            for (int i = 0; i < 3 && have < 3; ++i) {
                first = fib::io::read(connected.get(), got + have, 3 - have);
                if (first <= 0) break;
                have += static_cast<std::size_t>(first);
            }
            second = fib::io::read(connected.get(), got, sizeof got);
        });
    EXPECT_STREQ(got, "bye");
    EXPECT_GT(first, 0);
    EXPECT_EQ(second, 0);
}

// SO_LINGER {1, 0}: close() sends a RST instead of a FIN. The server resets only after the
// client's byte has arrived: the client has finished connect() by then (a reset that came
// before io::connect looked at SO_ERROR would fail the connect itself with ECONNRESET).
TEST(L04_Io, ReadReportsEconnresetWhenThePeerResets) {
    ssize_t result = -2;
    int error = 0;
    over_loopback(
        [](fib::UniqueFd& accepted) {
            char byte;
            ASSERT_EQ(fib::io::read(accepted.get(), &byte, 1), 1);
            const linger abort_on_close{1, 0};
            ASSERT_EQ(::setsockopt(accepted.get(), SOL_SOCKET, SO_LINGER, &abort_on_close,
                                   sizeof abort_on_close),
                      0);
            accepted.reset();
        },
        [&](fib::UniqueFd& connected) {
            ASSERT_EQ(fib::io::send_all(connected.get(), "r", 1), 1);
            char byte;
            result = fib::io::read(connected.get(), &byte, 1);
            error = errno;
        });
    EXPECT_EQ(result, -1);
    EXPECT_EQ(error, ECONNRESET);
}

bool has_flag(int fd, int get, int flag) { return (::fcntl(fd, get) & flag) != 0; }

// The accepted socket is the client's peer (its peer port is the client's local port), is
// non-blocking and close-on-exec, and carries bytes both ways.
TEST(L04_Io, ListenOnPortZeroThenConnectAndAcceptPairUp) {
    fib::FiberManager manager;
    fib::Waiter waiter;
    fib::UniqueFd listener = fib::tcp::listen("127.0.0.1", 0);
    const std::uint16_t port = fib::tcp::local_port(listener.get());
    EXPECT_NE(port, 0);
    std::uint16_t peer_port = 0, client_port = 0;
    bool nonblocking = false, cloexec = false;
    char server_got = 0, client_got = 0;
    fib::Fiber server([&] {
        sockaddr_in peer{};
        socklen_t length = sizeof peer;
        fib::UniqueFd accepted(
            fib::io::accept(listener.get(), reinterpret_cast<sockaddr*>(&peer), &length));
        ASSERT_TRUE(accepted);
        peer_port = ntohs(peer.sin_port);
        nonblocking = has_flag(accepted.get(), F_GETFL, O_NONBLOCK);
        cloexec = has_flag(accepted.get(), F_GETFD, FD_CLOEXEC);
        EXPECT_EQ(fib::io::read(accepted.get(), &server_got, 1), 1);
        EXPECT_EQ(fib::io::send_all(accepted.get(), "s", 1), 1);
    });
    fib::Fiber client([&] {
        fib::UniqueFd connected = fib::tcp::connect("127.0.0.1", port);
        ASSERT_TRUE(connected);
        client_port = fib::tcp::local_port(connected.get());
        EXPECT_EQ(fib::io::send_all(connected.get(), "c", 1), 1);
        EXPECT_EQ(fib::io::read(connected.get(), &client_got, 1), 1);
    });
    server.join();
    client.join();
    EXPECT_NE(client_port, 0);
    EXPECT_EQ(peer_port, client_port);
    EXPECT_TRUE(nonblocking);
    EXPECT_TRUE(cloexec);
    EXPECT_EQ(server_got, 'c');
    EXPECT_EQ(client_got, 's');
}

TEST(L04_Io, ConnectToAClosedPortGivesInvalidFdAndEconnrefused) {
    fib::FiberManager manager;
    fib::Waiter waiter;
    // A port that was free a moment ago and has no listener now.
    std::uint16_t port;
    {
        fib::UniqueFd listener = fib::tcp::listen("127.0.0.1", 0);
        port = fib::tcp::local_port(listener.get());
    }
    bool valid = true;
    int error = 0;
    fib::Fiber client([&] {
        fib::UniqueFd connected = fib::tcp::connect("127.0.0.1", port);
        error = errno;
        valid = static_cast<bool>(connected);
    });
    client.join();
    EXPECT_FALSE(valid);
    EXPECT_EQ(error, ECONNREFUSED);
}

TEST(L04_Io, ListenOnAnAddressInUseThrowsNamingTheAddress) {
    fib::UniqueFd first = fib::tcp::listen("127.0.0.1", 0);
    const std::uint16_t port = fib::tcp::local_port(first.get());
    try {
        fib::tcp::listen("127.0.0.1", port);
        ADD_FAILURE() << "the second listen on port " << port << " did not throw";
    } catch (const std::system_error& error) {
        EXPECT_EQ(error.code().value(), EADDRINUSE);
        EXPECT_NE(std::string(error.what()).find("127.0.0.1:" + std::to_string(port)),
                  std::string::npos)
            << error.what();
    }
}

TEST(L04_Io, MakeAddressOfANonNumericAddressThrowsInvalidArgument) {
    EXPECT_THROW(fib::tcp::make_address("not-an-ip", 1), std::invalid_argument);
    EXPECT_EQ(fib::tcp::make_address("127.0.0.1", 1).length, sizeof(sockaddr_in));
}

TEST(L04_Io, UniqueFdClosesOnDestructionAndOnReset) {
    int fds[2];
    ASSERT_EQ(::pipe2(fds, O_CLOEXEC), 0);
    {
        fib::UniqueFd owner(fds[0]);
        EXPECT_EQ(owner.get(), fds[0]);
    }
    EXPECT_TRUE(is_closed(fds[0]));
    fib::UniqueFd owner(fds[1]);
    owner.reset();
    EXPECT_TRUE(is_closed(fds[1]));
    EXPECT_FALSE(owner);
    EXPECT_EQ(owner.get(), -1);
}

// reset(other) closes the old fd and owns the new one; a move hands ownership over.
TEST(L04_Io, UniqueFdResetToAnotherFdAndMoveTransferOwnership) {
    int fds[2];
    ASSERT_EQ(::pipe2(fds, O_CLOEXEC), 0);
    fib::UniqueFd owner(fds[0]);
    owner.reset(fds[1]);
    EXPECT_TRUE(is_closed(fds[0]));
    EXPECT_FALSE(is_closed(fds[1]));
    {
        fib::UniqueFd moved(std::move(owner));
        EXPECT_FALSE(owner);
        EXPECT_EQ(moved.get(), fds[1]);
    }
    EXPECT_TRUE(is_closed(fds[1]));
}

TEST(L04_Io, UniqueFdReleaseGivesUpOwnership) {
    int fds[2];
    ASSERT_EQ(::pipe2(fds, O_CLOEXEC), 0);
    fib::UniqueFd(fds[1]).reset();
    int released;
    {
        fib::UniqueFd owner(fds[0]);
        released = owner.release();
        EXPECT_FALSE(owner);
    }
    EXPECT_EQ(released, fds[0]);
    EXPECT_FALSE(is_closed(released));
    EXPECT_EQ(::close(released), 0);
}

}  // namespace
