// L11_accept_test.cpp — lesson 11: fib::io::ring::Acceptor, a multishot accept over real loopback
// sockets: a thousand connects each accepted once, a queue that stops the multishot at its bound
// and arms it again, a cancelled accept() that leaves the Acceptor serving, a destructor that
// closes what nobody took and leaves nothing in flight, EMFILE reported once and then re-armed,
// and two fibers in accept() at once stopping the program. Each test skips, saying why, where the
// Waiter has no ring that runs operations.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <set>
#include <thread>
#include <vector>

#include "L04_echo_harness.hpp"
#include "L04_out_of_fds.hpp"
#include "L11_uring_harness.hpp"
#include "fib/fiber.hpp"
#include "fib/tcp.hpp"
#include "fib/uring_accept.hpp"
#include "fib/unique_fd.hpp"
#include "fib/waiter.hpp"

namespace {

using fib::io::ring::Acceptor;
using l04_echo::blocking_socket;
using l04_echo::connect_to;
using l04_echo::open_fds;
using l11_uring::ring_of;
using l11_uring::yield_until;

// The ring these tests run on: FIB_BACKEND when it names a ring rung, else "uring". A rung
// whose ring only polls (uring-poll) has no operations: the tests skip there.
const char* ring_backend() {
    const char* backend = std::getenv("FIB_BACKEND");
    return backend && std::strncmp(backend, "uring", 5) == 0 ? backend : "uring";
}

std::uint16_t port_of(int socket, bool peer) {
    sockaddr_in address{};
    socklen_t length = sizeof address;
    const int got = peer ? ::getpeername(socket, reinterpret_cast<sockaddr*>(&address), &length)
                         : ::getsockname(socket, reinterpret_cast<sockaddr*>(&address), &length);
    return got == 0 ? ntohs(address.sin_port) : 0;
}

// RLIMIT_NOFILE's soft limit set to `limit` for the test's scope, and put back however it ends.
struct FdLimit {
    rlimit original{};
    bool set = false;
    explicit FdLimit(rlim_t limit) {
        ::getrlimit(RLIMIT_NOFILE, &original);
        rlimit changed = original;
        changed.rlim_cur = std::min(limit, original.rlim_max);
        set = ::setrlimit(RLIMIT_NOFILE, &changed) == 0 && changed.rlim_cur == limit;
    }
    ~FdLimit() { ::setrlimit(RLIMIT_NOFILE, &original); }
};

// A blocking connect to 127.0.0.1:`port`. On the rungs without DEFER_TASKRUN, the kernel runs
// the ring's work for this thread (the multishot's accepts) by interrupting its next system
// call: a connect under SO_SNDTIMEO then fails with EINTR while its handshake goes on. Asked
// again, connect says EALREADY until the handshake is over, then EISCONN.
bool connect_through_interrupts(int socket, std::uint16_t port) {
    if (connect_to(socket, port)) return true;
    for (int attempt = 0; attempt < 1000 && (errno == EINTR || errno == EALREADY); ++attempt) {
        pollfd writable{socket, POLLOUT, 0};
        ::poll(&writable, 1, 1000);
        if (connect_to(socket, port)) return true;
    }
    return errno == EISCONN;
}

// A listening socket on 127.0.0.1, an ephemeral port, and clients that connect to it with
// blocking connects: the kernel finishes each handshake into the backlog, accepted or not.
struct Server {
    fib::UniqueFd listener = fib::tcp::listen("127.0.0.1", 0);
    std::uint16_t port = fib::tcp::local_port(listener.get());
    std::vector<fib::UniqueFd> clients;

    // Connects one more client; its local port, 0 if it failed.
    std::uint16_t connect_one() {
        clients.push_back(blocking_socket());
        return connect_through_interrupts(clients.back().get(), port) ? port_of(clients.back().get(), false) : 0;
    }
};

// ---- Every connection once -----------------------------------------------------------------

// A thread connects 1,000 clients while main takes them from an Acceptor with the default
// bound of 64: the multishot is stopped and re-armed many times over, and none is lost or
// handed out twice. Each accepted fd is open, non-blocking and close-on-exec, and its peer is
// one of the clients.
TEST(L11_Accept, AThousandConnectsAreEachAcceptedOnceNoneLostEveryFdDistinctAndOpen) {
    constexpr int kClients = 1000;
    const FdLimit limit(2 * kClients + 256);
    if (!limit.set) GTEST_SKIP() << "RLIMIT_NOFILE's hard limit is below " << 2 * kClients + 256;
    fib::FiberManager manager;
    fib::Waiter waiter(ring_backend());
    SKIP_WITHOUT_RING(waiter);
    Server server;
    std::vector<fib::UniqueFd> accepted;
    std::set<std::uint16_t> client_ports;
    {
        Acceptor acceptor(server.listener.get());
        std::thread clients([&] {
            for (int i = 0; i < kClients; ++i) client_ports.insert(server.connect_one());
        });
        for (int i = 0; i < kClients; ++i) {
            const int fd = acceptor.accept();
            if (fd < 0) {
                ADD_FAILURE() << "accept() failed: " << std::strerror(errno);
                break;
            }
            accepted.emplace_back(fd);
        }
        clients.join();
        EXPECT_EQ(acceptor.queued(), 0u);
    }
    ASSERT_EQ(accepted.size(), static_cast<std::size_t>(kClients));
    EXPECT_EQ(client_ports.size(), static_cast<std::size_t>(kClients));
    EXPECT_EQ(client_ports.count(0), 0u);
    std::set<int> numbers;
    std::set<std::uint16_t> peer_ports;
    for (const fib::UniqueFd& fd : accepted) {
        numbers.insert(fd.get());
        peer_ports.insert(port_of(fd.get(), true));
        EXPECT_NE(::fcntl(fd.get(), F_GETFL) & O_NONBLOCK, 0);
        EXPECT_NE(::fcntl(fd.get(), F_GETFD) & FD_CLOEXEC, 0);
    }
    EXPECT_EQ(numbers.size(), static_cast<std::size_t>(kClients));
    EXPECT_EQ(peer_ports, client_ports);
    EXPECT_EQ(ring_of(waiter)->in_flight(), 0u);
}

// ---- The bound -----------------------------------------------------------------------------

// Clients connect one at a time while no fiber accepts. The queue fills to the bound, then
// the multishot is cancelled, and the 12 clients after it wait in the backlog: the queue stays
// at the bound. Taking an fd arms it again, and every client is accepted, in order. Arming
// again with 12 in the backlog takes all 12 in one go (the kernel's multishot accepts until
// the backlog is empty): the bound stops the asking, it cannot cut a burst short (see
// uring_accept.hpp), so the queue's size is checked only while clients come one at a time.
TEST(L11_Accept, AFullQueueStopsTheMultishotAtTheBoundAndTakingFromItArmsItAgain) {
    constexpr std::size_t kBound = 8;
    constexpr std::size_t kClients = 20;
    fib::FiberManager manager;
    fib::Waiter waiter(ring_backend());
    SKIP_WITHOUT_RING(waiter);
    Server server;
    std::vector<std::uint16_t> client_ports;
    Acceptor acceptor(server.listener.get(), kBound);
    std::size_t most_queued = 0;
    for (std::size_t i = 0; i < kClients; ++i) {
        client_ports.push_back(server.connect_one());
        const std::size_t expected = std::min(i + 1, kBound);
        EXPECT_TRUE(yield_until([&] { return acceptor.queued() == expected; })) << "client " << i;
        // At the bound, the cancel is in before the next client connects.
        if (expected == kBound) {
            EXPECT_TRUE(yield_until([&] { return !acceptor.armed(); })) << "client " << i;
        }
        most_queued = std::max(most_queued, acceptor.queued());
    }
    for (int turn = 0; turn < 10; ++turn) fib::this_fiber::yield();
    EXPECT_EQ(most_queued, kBound);
    EXPECT_EQ(acceptor.queued(), kBound);
    EXPECT_FALSE(acceptor.armed());
    std::vector<std::uint16_t> peer_ports;
    for (std::size_t i = 0; i < kClients; ++i) {
        const int fd = acceptor.accept();
        ASSERT_GE(fd, 0) << std::strerror(errno);
        const fib::UniqueFd connection(fd);
        peer_ports.push_back(port_of(fd, true));
        // Taking one made room: armed again at once. Where each SQE is submitted at once
        // (uring-ops), the backlog has come in and the bound has stopped it again already.
        if (i == 0) {
            EXPECT_TRUE(acceptor.armed() || acceptor.queued() > kBound - 1);
        }
    }
    EXPECT_EQ(peer_ports, client_ports);
}

// ---- Cancellation --------------------------------------------------------------------------

// A fiber parked in accept() is cancelled: it gets ECANCELED, and the multishot stays armed:
// the next client is accepted and handed to the next accept().
TEST(L11_Accept, ACancelledAcceptReturnsEcanceledAndTheAcceptorStillAcceptsAfterwards) {
    fib::FiberManager manager;
    fib::Waiter waiter(ring_backend());
    SKIP_WITHOUT_RING(waiter);
    Server server;
    Acceptor acceptor(server.listener.get());
    int result = 0, error = 0;
    bool started = false;
    fib::Fiber taker({.name = "taker"}, [&] {
        started = true;  // and it parks in accept() without yielding first
        result = acceptor.accept();
        error = errno;
    });
    ASSERT_TRUE(yield_until([&] { return started; }));
    taker.cancel();
    taker.join();
    EXPECT_EQ(result, -1);
    EXPECT_EQ(error, ECANCELED);
    EXPECT_TRUE(acceptor.armed());
    const std::uint16_t client_port = server.connect_one();
    const int fd = acceptor.accept();
    ASSERT_GE(fd, 0) << std::strerror(errno);
    const fib::UniqueFd connection(fd);
    EXPECT_EQ(port_of(fd, true), client_port);
}

// The cancelled fiber is woken but has not run yet when main calls accept() and parks in it.
// When the cancelled fiber runs, it must not clear the wait that is main's now: the client
// connects only after it has run (an atomic the client's thread waits on), and its CQE must
// still wake main.
TEST(L11_Accept, ACancelledFiberThatRunsLateLeavesTheNextWaitersWakeInPlace) {
    fib::FiberManager manager;
    fib::Waiter waiter(ring_backend());
    SKIP_WITHOUT_RING(waiter);
    Server server;
    Acceptor acceptor(server.listener.get());
    std::atomic<bool> taker_ran{false};
    int result = 0;
    bool started = false;
    fib::Fiber taker({.name = "taker"}, [&] {
        started = true;
        result = acceptor.accept();
        taker_ran = true;
        taker_ran.notify_one();
    });
    ASSERT_TRUE(yield_until([&] { return started; }));
    taker.cancel();  // woken, queued, not run
    std::uint16_t client_port = 0;
    std::thread client([&] {
        taker_ran.wait(false);
        client_port = server.connect_one();
    });
    const int fd = acceptor.accept();
    client.join();
    taker.join();
    EXPECT_EQ(result, -1);
    ASSERT_GE(fd, 0) << std::strerror(errno);
    const fib::UniqueFd connection(fd);
    EXPECT_EQ(port_of(fd, true), client_port);
}

// ---- The destructor ------------------------------------------------------------------------

// Five connections wait in the queue when the Acceptor goes: their fds are closed (the set of
// open fds is what it was before the Acceptor, and each client reads end of file), and the
// ring holds no operation any more.
TEST(L11_Accept, DestroyingAnAcceptorClosesItsQueuedFdsAndLeavesNoOperationInFlight) {
    fib::FiberManager manager;
    fib::Waiter waiter(ring_backend());
    SKIP_WITHOUT_RING(waiter);
    fib::UringPoller& ring = *ring_of(waiter);
    Server server;
    for (int i = 0; i < 5; ++i) server.clients.push_back(blocking_socket());
    const std::set<int> before = open_fds();
    const std::size_t in_flight_before = ring.in_flight();
    {
        Acceptor acceptor(server.listener.get(), 8);
        EXPECT_EQ(ring.in_flight(), in_flight_before + 1);
        for (std::size_t i = 0; i < 5; ++i) {
            ASSERT_TRUE(connect_through_interrupts(server.clients[i].get(), server.port));
            ASSERT_TRUE(yield_until([&] { return acceptor.queued() == i + 1; }));
        }
        EXPECT_EQ(open_fds().size(), before.size() + 5);
    }
    EXPECT_EQ(open_fds(), before);
    EXPECT_EQ(ring.in_flight(), in_flight_before);
    // Closed, each accepted fd sent its client a FIN. The poll's limit only turns a broken
    // destructor (the fd still open) into a failure instead of a hang.
    for (const fib::UniqueFd& client : server.clients) {
        pollfd readable{client.get(), POLLIN, 0};
        ::poll(&readable, 1, 1000);
        char byte;
        const ssize_t n = ::recv(client.get(), &byte, 1, MSG_DONTWAIT);
        EXPECT_TRUE(n == 0 || (n < 0 && errno == ECONNRESET)) << n << " " << std::strerror(errno);
    }
}

// ---- EMFILE --------------------------------------------------------------------------------

// The limit is lowered to leave 3 fd numbers free before the Acceptor arms (the kernel reads
// it then), and 9 clients connect. accept() hands out 3 fds, then reports EMFILE once; with
// those 3 closed, the next accept() arms again and gets 3 more, then EMFILE again; with the
// limit raised, the next arms again and gets the last 3. No connection is lost: the ones the
// kernel could not take waited in the backlog.
TEST(L11_Accept, EmfileIsReportedOnceAndTheNextAcceptArmsAgainAndGetsTheWaitingConnections) {
    constexpr int kFree = 3;
    fib::FiberManager manager;
    fib::Waiter waiter(ring_backend());
    SKIP_WITHOUT_RING(waiter);
    Server server;
    for (int i = 0; i < 3 * kFree; ++i) server.clients.push_back(blocking_socket());
    std::vector<std::uint16_t> client_ports, peer_ports;
    std::vector<int> errors;
    std::vector<fib::UniqueFd> kept;
    // Takes `count` fds and keeps them, then (`then_error`) one accept() more, which must fail.
    auto take = [&](Acceptor& acceptor, int count, bool then_error) {
        for (int i = 0; i < count; ++i) {
            const int fd = acceptor.accept();
            if (fd < 0) {
                ADD_FAILURE() << "accept() failed: " << std::strerror(errno);
                return;
            }
            peer_ports.push_back(port_of(fd, true));
            kept.emplace_back(fd);
        }
        if (then_error) {
            EXPECT_EQ(acceptor.accept(), -1);
            errors.push_back(errno);
        }
    };
    {
        FdLimit limit(l04_echo::limit_leaving(kFree));
        ASSERT_TRUE(limit.set);
        Acceptor acceptor(server.listener.get());
        for (fib::UniqueFd& client : server.clients) {
            ASSERT_TRUE(connect_through_interrupts(client.get(), server.port));
            client_ports.push_back(port_of(client.get(), false));
        }
        take(acceptor, kFree, true);
        EXPECT_FALSE(acceptor.armed());
        kept.clear();  // 3 numbers free again, under the same limit
        take(acceptor, kFree, true);
        EXPECT_FALSE(acceptor.armed());
        ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &limit.original), 0);
        take(acceptor, kFree, false);
        kept.clear();
    }
    EXPECT_EQ(errors, (std::vector<int>{EMFILE, EMFILE}));
    EXPECT_EQ(peer_ports, client_ports);
}

// The kernel reads RLIMIT_NOFILE when it takes the SQE (io_accept_prep), not at each accept:
// an Acceptor armed before the limit is lowered still hands out fds above the new limit,
// where dup() (or lesson 4's accept4) gets EMFILE. Why fib::io::accept stays a readiness wait.
TEST(L11_Accept, AnArmedAcceptorKeepsTheFdLimitItWasArmedWithAndIgnoresALowerOne) {
    fib::FiberManager manager;
    fib::Waiter waiter(ring_backend());
    SKIP_WITHOUT_RING(waiter);
    fib::UringPoller& ring = *ring_of(waiter);
    Server server;
    server.clients.push_back(blocking_socket());
    Acceptor acceptor(server.listener.get());
    ASSERT_TRUE(yield_until([&] { return ring.ring().unsubmitted() == 0; }));  // the kernel has it
    int fd = -1, dup_error = 0;
    const rlim_t lowered = l04_echo::limit_leaving(0);
    {
        const FdLimit limit(lowered);
        ASSERT_TRUE(limit.set);
        EXPECT_EQ(::dup(0), -1);
        dup_error = errno;
        ASSERT_TRUE(connect_through_interrupts(server.clients[0].get(), server.port));
        fd = acceptor.accept();
    }
    ASSERT_GE(fd, 0) << std::strerror(errno);
    const fib::UniqueFd connection(fd);
    EXPECT_EQ(dup_error, EMFILE);
    EXPECT_GE(static_cast<rlim_t>(fd), lowered);
}

// ---- Misuse --------------------------------------------------------------------------------

bool ring_runs_operations() {
    fib::FiberManager manager;
    fib::Waiter waiter(ring_backend());
    return ring_of(waiter) != nullptr;
}

// Whichever of the two runs first (a shuffled schedule may start the second) waits; the other
// stops the program, and the message names both.
void two_fibers_wait_in_one_accept() {
    fib::FiberManager manager;
    fib::Waiter waiter(ring_backend());
    Server server;
    Acceptor acceptor(server.listener.get());
    fib::Fiber first({.name = "first-taker"}, [&] { acceptor.accept(); });
    fib::Fiber second({.name = "second-taker"}, [&] { acceptor.accept(); });
    // Both have run by now. No client comes: were the second let in, the child would end
    // here, alive, and the death test fail rather than hang.
    for (int turn = 0; turn < 5; ++turn) fib::this_fiber::yield();
    std::_Exit(0);
}

TEST(L11_AcceptDeathTest, ASecondFiberInAcceptStopsTheProgramNamingBothFibers) {
    if (!ring_runs_operations()) GTEST_SKIP() << "no ring that runs operations here";
    EXPECT_DEATH(two_fibers_wait_in_one_accept(),
                 "(first|second)-taker\\) called fib::io::ring::Acceptor::accept\\(\\) on fd [0-9]+, where "
                 "fiber [0-9]+ \\((first|second)-taker\\) already waits; one fiber at a time may");
}

// On epoll there is no ring to hand the multishot to: the constructor stops, saying so.
void an_acceptor_on_epoll() {
    fib::FiberManager manager;
    fib::Waiter waiter("epoll");
    Server server;
    Acceptor acceptor(server.listener.get());
}

TEST(L11_AcceptDeathTest, AnAcceptorOnAWaiterWithoutARingStopsSayingWhatItNeeds) {
    EXPECT_DEATH(an_acceptor_on_epoll(), "Acceptor was created on a thread whose Waiter uses epoll; it needs "
                                         "one that runs fib::io on an io_uring");
}

}  // namespace
