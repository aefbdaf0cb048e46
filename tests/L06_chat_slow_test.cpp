// L06_chat_slow_test.cpp — lesson 6: the chat server with clients that do not keep up. A reader
// that never reads does not stall the room, and when it reads at last it finds every line whole,
// each gap announced in its place with the exact count; an idle room sleeps in the kernel; a stop
// with fibers blocked sending to such readers ends serve() with every fiber gone. The lines'
// bytes are checked in tests/L06_chat_test.cpp; the helpers are in tests/L06_chat_harness.hpp.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "L02_schedule.hpp"
#include "L04_waiter_harness.hpp"
#include "L06_chat_harness.hpp"
#include "fib/condvar.hpp"
#include "fib/fiber.hpp"
#include "fib/waiter.hpp"

namespace {

using namespace l05_chat;
using l04_waiter::in_system_call;

// User 1 has a receive buffer of a few KiB and reads nothing. User 2 says 4,000-byte lines until
// the server reports a line dropped, then "end"; user 3 reads them all meanwhile. User 2 stays at
// most kWindow lines (32 KiB) ahead of user 3, so only user 1's outbox can overflow: every drop
// is user 1's, and user 3 must get every line. Then user 1 reads.
TEST(L06_Chat, ASlowReaderMissesLinesWithAnExactNoticeAndDoesNotStallTheOthers) {
    EXPECTS_FIFO_ORDER();
    constexpr int kWindow = 8, kMaxLines = 10000;
    ChatServerThread server;
    fib::FiberManager manager;
    fib::Waiter waiter;
    ChatClient slow(server.port, 4096);
    ChatClient sender(server.port), reader(server.port);
    ASSERT_TRUE(slow.connected());
    EXPECT_EQ(sender.read_line(), welcome(2, 2));
    EXPECT_EQ(sender.read_line(), joined(3));
    EXPECT_EQ(reader.read_line(), welcome(3, 3));

    int sent = 0, heard = 0;
    bool reader_done = false, reader_intact = true;
    fib::CondVar heard_more;
    fib::Fiber talking([&] {
        while (sent < kMaxLines && server.live->lines_dropped() == 0) {
            heard_more.wait([&] { return sent - heard < kWindow || reader_done; });
            if (!sender.say(long_text(sent))) break;
            ++sent;
        }
        sender.say("end");
    });
    fib::Fiber listening([&] {
        for (;;) {
            const std::optional<std::string> line = reader.read_line();
            if (line == said(2, "end")) break;
            reader_intact = reader_intact && line == said(2, long_text(heard));
            if (!line) break;
            ++heard;
            heard_more.notify_all();
        }
        reader_done = true;
        heard_more.notify_all();
    });
    talking.join();
    listening.join();
    EXPECT_TRUE(reader_intact);
    EXPECT_EQ(heard, sent);
    ASSERT_GT(server.live->lines_dropped(), 0u) << "no drop after " << sent << " lines";

    // What came before the flood, then user 2's lines and "end", each whole and in order, every
    // gap announced by a notice at its very place that counts exactly the lines missing there.
    EXPECT_EQ(slow.read_line(), welcome(1, 1));
    EXPECT_EQ(slow.read_line(), joined(2));
    EXPECT_EQ(slow.read_line(), joined(3));
    int next = 0, notices = 0;
    std::uint64_t missed = 0;
    bool intact = true;
    while (intact && next <= sent) {
        const std::optional<std::string> line = slow.read_line();
        if (const std::uint64_t count = line ? dropped_in(*line) : 0) {
            next += static_cast<int>(count);
            missed += count;
            ++notices;
            continue;
        }
        intact = line == said(2, next < sent ? long_text(next) : "end");
        ++next;
    }
    EXPECT_TRUE(intact) << "at line " << next - 1;
    EXPECT_EQ(next, sent + 1);
    EXPECT_GE(notices, 1);
    EXPECT_EQ(missed, server.live->lines_dropped());
    EXPECT_TRUE(slow.nothing_pending());
}

// How often thread `tid` has been switched out, voluntarily (it blocked) or not.
long context_switches(pid_t tid) {
    std::ifstream status("/proc/self/task/" + std::to_string(tid) + "/status");
    long total = 0;
    for (std::string key; status >> key;) {
        long count = 0;
        if (key == "voluntary_ctxt_switches:" || key == "nonvoluntary_ctxt_switches:") {
            status >> count;
            total += count;
        }
    }
    return total;
}

// Ten members, all welcomed, nobody talking: the server's thread sits in the Poller's system
// call and is not switched in once in 100 ms. The window is for watching, not for waiting: a
// slow machine cannot fail it, only a server that wakes up (a tick, polling) can.
TEST(L06_Chat, AnIdleRoomSleepsInTheKernelWithoutWakingUp) {
    ChatServerThread server;
    fib::FiberManager manager;
    fib::Waiter waiter;
    std::vector<ChatClient> clients = fill_room(server.port, 10);
    // Settled: seen in the system call twice, 10 ms apart, with no switch in between.
    bool settled = false;
    for (int i = 0; i < 2000 && !settled; ++i) {
        const long before = context_switches(server.tid);
        const bool asleep = in_system_call(server.tid);
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
        settled = asleep && in_system_call(server.tid) && context_switches(server.tid) == before;
    }
    ASSERT_TRUE(settled);
    const long switches = context_switches(server.tid);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    EXPECT_TRUE(in_system_call(server.tid));
    EXPECT_EQ(context_switches(server.tid), switches);
}

// Ten members; one more floods the room with lines until some are dropped, so the fibers of the
// ten, which never read, are blocked sending. The stop must still end serve(): the acceptor and
// every client fiber finished, none left waiting, every client's connection closed.
TEST(L06_Chat, StopWithFibersBlockedSendingToReadersThatNeverReadEndsServeWithEveryFiberGone) {
    EXPECTS_FIFO_ORDER();
    ChatServerThread server;
    fib::FiberManager manager;
    fib::Waiter waiter;
    std::vector<ChatClient> clients;
    for (int i = 0; i < 10; ++i) clients.emplace_back(server.port, 4096);
    ChatClient flooder(server.port);
    ASSERT_EQ(flooder.read_line(), welcome(11, 11));
    for (int i = 0; i < 10000 && server.live->lines_dropped() == 0; ++i)
        ASSERT_TRUE(flooder.say(long_text(i)));
    ASSERT_GT(server.live->lines_dropped(), 0u);
    server.stop();
    const ChatServerThread::After& after = server.after;
    EXPECT_TRUE(after.returned);
    EXPECT_EQ(server.live->clients_connected(), 0u);
    EXPECT_EQ(server.live->clients_served(), 11u);
    // The acceptor, the 11 clients, and the Waiter's fiber each time it started.
    EXPECT_EQ(after.manager.spawned, 12u + after.waiter.fibers_started);
    EXPECT_EQ(after.manager.finished, after.manager.spawned);
    EXPECT_EQ(after.manager.records, 0u);
    EXPECT_EQ(after.manager.stacks_pooled, after.manager.stacks_created);
    EXPECT_EQ(after.waiter.waiting, 0u);
    for (ChatClient& client : clients) EXPECT_TRUE(client.read_until_closed());
    EXPECT_TRUE(flooder.read_until_closed());
}

}  // namespace
