// L06_chat_hostile_test.cpp — lesson 6: chat clients that try to hold the server. Two clients
// that send megabytes and never read are closed by the write deadline; one that reads a byte
// at a time is too; a silent one is closed by the idle timeout (at once when that timeout is
// Clock::duration::min()), and the room is told; a stop while member fibers are blocked sending
// (no deadline in sight) cancels them and serve() returns. Only outcomes are checked (who was
// closed, the counters); the deadlines are short so that the tests are quick, and no result
// depends on how long anything took.
#include <gtest/gtest.h>
#include <sys/socket.h>

#include <chrono>
#include <string>
#include <vector>

#include "L06_chat_harness.hpp"
#include "fib/fiber.hpp"
#include "fib/timer.hpp"
#include "fib/waiter.hpp"

namespace {

using namespace l05_chat;
using namespace std::chrono_literals;

// Says 4,000-byte lines until the server stops taking them (the send fails once it has closed
// the connection) or `limit` bytes are out; the bytes sent. It yields after each line, so the
// test's other clients take turns with it even while the server takes every byte at once.
std::size_t flood(ChatClient& client, std::size_t limit) {
    std::size_t sent = 0;
    for (int i = 0; sent < limit; ++i) {
        const std::string line = long_text(i);
        if (!client.say(line)) break;
        sent += line.size() + 1;
        fib::this_fiber::yield();
    }
    return sent;
}

// A, B and C all say long lines as fast as they can; C also reads everything, A and B never
// read. C's lines keep coming to both A and B even after one of them is gone, so each one's
// member fiber ends up blocked sending and meets its write deadline. Both are closed (with a
// reset, so the kernel drops what it held for them), both floods end short of the 1 GB they
// would send, and C, which drops what it cannot take from its outbox, stays.
TEST(L06_ChatHostile, TwoClientsThatSendMegabytesAndNeverReadAreClosedByTheWriteDeadline) {
    ChatServerThread server(ChatOptions{.port = 0, .quiet = true, .write_timeout = 200ms});
    fib::FiberManager manager;
    fib::Waiter waiter;
    ChatClient a(server.port, 4096), b(server.port, 4096), c(server.port);
    constexpr std::size_t kLimit = std::size_t{1} << 30;
    std::size_t sent_a = 0, sent_b = 0;
    bool floods_done = false;
    fib::Fiber talking([&] {
        for (int i = 0; !floods_done; ++i) {
            ASSERT_TRUE(c.say(long_text(i)));
            fib::this_fiber::yield();
        }
    });
    int listening_ended = 0;
    fib::Fiber listening([&] {
        char chunk[16 * 1024];
        while (fib::io::read(c.fd(), chunk, sizeof chunk, 20s) > 0) {
        }
        listening_ended = errno;
    });
    fib::Fiber flooding_a([&] { sent_a = flood(a, kLimit); });
    fib::Fiber flooding_b([&] { sent_b = flood(b, kLimit); });
    flooding_a.join();
    flooding_b.join();
    floods_done = true;
    talking.join();
    listening.cancel();
    listening.join();
    EXPECT_EQ(listening_ended, ECANCELED);
    EXPECT_LT(sent_a, kLimit);
    EXPECT_LT(sent_b, kLimit);
    server.stop();
    EXPECT_EQ(server.live->slow_closed(), 2u);
    EXPECT_EQ(server.live->clients_connected(), 0u);
    EXPECT_EQ(server.after.manager.records, 0u);
}

// The reader takes one byte every 50 ms while the flooder fills its outbox: the batch in
// flight cannot go out within the deadline, so the reader is closed (the server's count says
// so while the reader still has bytes to read). The close is a reset: the kernel drops the
// megabytes it held for the reader, which finds only what its own small buffer had, then
// ECONNRESET. The flooder, whose own outbox stays empty, is not closed.
TEST(L06_ChatHostile, AClientReadingAByteAtATimeIsClosedByTheWriteDeadline) {
    ChatServerThread server(ChatOptions{.port = 0, .quiet = true, .write_timeout = 300ms});
    fib::FiberManager manager;
    fib::Waiter waiter;
    ChatClient trickle(server.port, 4096);
    ChatClient flooder(server.port);
    auto closed = [&] { return server.live->slow_closed() == 1; };
    fib::Fiber reading([&] {
        char byte = 0;
        for (int i = 0; i < 2000 && !closed(); ++i) {
            ASSERT_EQ(fib::io::read(trickle.fd(), &byte, 1, 20s), 1);
            fib::sleep_for(50ms);
        }
    });
    fib::Fiber flooding([&] {
        for (int i = 0; !closed() && i < 100000; ++i) ASSERT_TRUE(flooder.say(long_text(i)));
    });
    reading.join();
    flooding.join();
    ASSERT_TRUE(closed());
    std::size_t left_over = 0;
    char chunk[4096];
    ssize_t n = 0;
    while ((n = fib::io::read(trickle.fd(), chunk, sizeof chunk, 20s)) > 0)
        left_over += static_cast<std::size_t>(n);
    EXPECT_EQ(n, -1);
    EXPECT_EQ(errno, ECONNRESET);
    EXPECT_LT(left_over, 64u * 1024);
    server.stop();
    EXPECT_EQ(server.live->slow_closed(), 1u);
    EXPECT_EQ(server.live->clients_served(), 2u);
}

// A client that says nothing is closed after the idle timeout; the one that talks stays, and
// hears that the silent one left.
TEST(L06_ChatHostile, AMemberSilentPastTheIdleTimeoutIsClosedAndTheRoomIsTold) {
    ChatServerThread server(ChatOptions{.port = 0, .quiet = true, .idle_timeout = 300ms});
    fib::FiberManager manager;
    fib::Waiter waiter;
    std::vector<ChatClient> clients = fill_room(server.port, 2);
    bool talking = true;
    fib::Fiber chatter([&] {
        while (talking) {
            ASSERT_TRUE(clients[1].say("still here"));
            fib::sleep_for(50ms);
        }
    });
    EXPECT_TRUE(clients[0].read_until_closed());
    EXPECT_EQ(clients[1].read_line(), left(1));
    talking = false;
    chatter.join();
    server.stop();
    EXPECT_EQ(server.live->idle_closed(), 1u);
    EXPECT_EQ(server.live->slow_closed(), 0u);
}

// With the shortest idle timeout there is, Clock::duration::min(), a member is closed as idle
// right after its welcome, not never: its idle deadline is already past, and the time left until
// it must not overflow into weeks.
TEST(L06_ChatHostile, TheShortestIdleTimeoutClosesAMemberAtOnceNotNever) {
    ChatServerThread server(
        ChatOptions{.port = 0, .quiet = true, .idle_timeout = fib::Clock::duration::min()});
    fib::FiberManager manager;
    fib::Waiter waiter;
    std::vector<ChatClient> clients = fill_room(server.port, 1);
    EXPECT_TRUE(clients[0].read_until_closed());
    server.stop();
    EXPECT_EQ(server.live->idle_closed(), 1u);
    EXPECT_EQ(server.live->slow_closed(), 0u);
}

// With no deadline near, ten members are blocked sending to clients that never read when the
// stop comes: the cancel ends each send, and serve() returns with every fiber gone.
TEST(L06_ChatHostile, AStopCancelsMembersBlockedSendingAndServeReturns) {
    ChatServerThread server(ChatOptions{.port = 0, .quiet = true, .write_timeout = 1h});
    fib::FiberManager manager;
    fib::Waiter waiter;
    std::vector<ChatClient> clients;
    for (int i = 0; i < 10; ++i) clients.emplace_back(server.port, 4096);
    ChatClient flooder(server.port);
    for (int i = 0; i < 20000 && server.live->lines_dropped() == 0; ++i)
        ASSERT_TRUE(flooder.say(long_text(i)));
    ASSERT_GT(server.live->lines_dropped(), 0u);  // outboxes are full: their fibers are blocked
    server.stop();
    EXPECT_TRUE(server.after.returned);
    EXPECT_EQ(server.live->clients_connected(), 0u);
    EXPECT_EQ(server.after.manager.records, 0u);
    EXPECT_EQ(server.after.waiter.waiting, 0u);
    EXPECT_EQ(server.live->slow_closed(), 0u);
}

}  // namespace
