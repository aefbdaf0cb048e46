// L06_chat_test.cpp — lesson 6: the chat server's lines, byte for byte, over loopback sockets.
// 50 clients each get every other client's lines exactly, in each sender's order; the welcome and
// the join and leave notices are exact; empty lines are not relayed, long ones are cut at 4 KiB;
// a client leaving mid-line is not heard; taking the outbox resets the mail, so a member whose
// client keeps sending still parks. The slow reader, the idle room and the stop are in
// tests/L06_chat_slow_test.cpp; the helpers both use are in tests/L06_chat_harness.hpp.
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "../lessons/06-time-and-events/chat_lines.hpp"
#include "L02_schedule.hpp"
#include "L06_chat_harness.hpp"
#include "fib/fiber.hpp"
#include "fib/waiter.hpp"

namespace {

using namespace l05_chat;

// What client `index` (user index + 1) says in `round`: 1 to 300 bytes of any value but '\n'
// ('\0', '\r' and bytes over 0x7f too), from a seed of its own.
std::string text_of(int index, int round) {
    std::mt19937 random(static_cast<unsigned>(index * 1000 + round));
    std::string text(1 + random() % 300, '\0');
    for (char& byte : text) do
            byte = static_cast<char>(random());
        while (byte == '\n');
    return text;
}

// The user a relayed line is from ("user 7: ..."), or 0.
int user_of(const std::string& line) {
    int user = 0;
    return std::sscanf(line.c_str(), "user %d: ", &user) == 1 ? user : 0;
}

// Client `index` of `count` says its line of each round, then reads until it has every other
// client's line of that round, checking each line whole against what its sender said next.
// Lock-step rounds keep at most two rounds of lines (~30 KiB) in flight to any client: far below
// the outbox bound, so nothing may be dropped and every byte must arrive.
bool chat_in_rounds(ChatClient& client, int index, int count, int rounds) {
    std::vector<int> heard(count, 0);  // lines heard so far from each client
    heard[index] = rounds;
    for (int round = 0; round < rounds; ++round) {
        if (!client.say(text_of(index, round))) return false;
        for (int other = 0; other < count; ++other) {
            while (heard[other] <= round) {
                const std::optional<std::string> line = client.read_line();
                if (!line) return false;
                const int sender = user_of(*line) - 1;
                if (sender < 0 || sender >= count || heard[sender] >= rounds ||
                    *line != said(sender + 1, text_of(sender, heard[sender])))
                    return false;
                ++heard[sender];
            }
        }
    }
    return true;
}

TEST(L06_Chat, FiftyClientsEachGetEveryOtherClientsLinesByteExactInEachSendersOrder) {
    constexpr int kClients = 50, kRounds = 20;
    ChatServerThread server;
    fib::FiberManager manager;
    fib::Waiter waiter;
    std::vector<ChatClient> clients = fill_room(server.port, kClients);
    int intact = 0;
    std::vector<fib::Fiber> talkers;
    for (int index = 0; index < kClients; ++index)
        talkers.emplace_back(
            [&, index] { intact += chat_in_rounds(clients[index], index, kClients, kRounds); });
    for (fib::Fiber& talker : talkers) talker.join();
    EXPECT_EQ(intact, kClients);
    // Not one byte more: no line twice, no line back to its sender.
    for (ChatClient& client : clients) EXPECT_TRUE(client.nothing_pending());
    EXPECT_EQ(server.live->lines_relayed(), std::uint64_t{kClients * kRounds});
    clients.clear();
    server.stop();
    EXPECT_EQ(server.live->clients_served(), std::uint64_t{kClients});
    EXPECT_EQ(server.live->lines_relayed(), std::uint64_t{kClients * kRounds});
    EXPECT_EQ(server.live->lines_dropped(), 0u);
    EXPECT_EQ(server.live->clients_connected(), 0u);
}

TEST(L06_Chat, WelcomeJoinAndLeaveNoticesAreExactAndEmptyLinesAreNotRelayed) {
    ChatServerThread server;
    fib::FiberManager manager;
    fib::Waiter waiter;
    ChatClient a(server.port);
    EXPECT_EQ(a.read_line(), "*** you are user 1; 1 in the room\n");
    ChatClient b(server.port);
    EXPECT_EQ(b.read_line(), "*** you are user 2; 2 in the room\n");
    EXPECT_EQ(a.read_line(), "*** user 2 joined\n");
    ChatClient c(server.port);
    EXPECT_EQ(c.read_line(), "*** you are user 3; 3 in the room\n");
    EXPECT_EQ(a.read_line(), "*** user 3 joined\n");
    EXPECT_EQ(b.read_line(), "*** user 3 joined\n");

    ASSERT_TRUE(b.say("hi"));
    EXPECT_EQ(a.read_line(), "user 2: hi\n");
    EXPECT_EQ(c.read_line(), "user 2: hi\n");
    b.close();
    EXPECT_EQ(a.read_line(), "*** user 2 left\n");
    EXPECT_EQ(c.read_line(), "*** user 2 left\n");

    // Empty lines say nothing; '\r' and '\0' are text like any other byte.
    ASSERT_TRUE(a.send(std::string("\n\r\n\nx\0y\n", 8)));
    EXPECT_EQ(c.read_line(), "user 1: \r\n");
    EXPECT_EQ(c.read_line(), std::string("user 1: x\0y\n", 12));
    // Numbers are not reused: the next to come is user 4, in a room of 3.
    ChatClient d(server.port);
    EXPECT_EQ(d.read_line(), "*** you are user 4; 3 in the room\n");
    EXPECT_EQ(a.read_line(), "*** user 4 joined\n");
    EXPECT_EQ(c.read_line(), "*** user 4 joined\n");
    EXPECT_TRUE(a.nothing_pending());
    EXPECT_TRUE(c.nothing_pending());
    EXPECT_TRUE(d.nothing_pending());
}

TEST(L06_Chat, ALineLongerThan4KiBIsRelayedInPiecesOf4KiBAndTheRestWaitsForItsNewline) {
    ChatServerThread server;
    fib::FiberManager manager;
    fib::Waiter waiter;
    std::vector<ChatClient> clients = fill_room(server.port, 2);
    ChatClient& a = clients[0];
    ChatClient& b = clients[1];
    ASSERT_TRUE(a.send(std::string(4096, 'a') + "\n"));
    EXPECT_EQ(b.read_line(), said(1, std::string(4096, 'a')));
    ASSERT_TRUE(a.send(std::string(10000, 'b') + "\n"));
    EXPECT_EQ(b.read_line(), said(1, std::string(4096, 'b')));
    EXPECT_EQ(b.read_line(), said(1, std::string(4096, 'b')));
    EXPECT_EQ(b.read_line(), said(1, std::string(1808, 'b')));
    // Without a newline, 4096 bytes go as soon as byte 4097 arrives; the rest waits.
    ASSERT_TRUE(a.send(std::string(5000, 'c')));
    EXPECT_EQ(b.read_line(), said(1, std::string(4096, 'c')));
    ASSERT_TRUE(a.send("d\n"));
    EXPECT_EQ(b.read_line(), said(1, std::string(904, 'c') + "d"));
    EXPECT_TRUE(b.nothing_pending());
    EXPECT_EQ(server.live->lines_relayed(), 6u);
}

// One leaves with a FIN after half a line, one with a reset (SO_LINGER 0) after half a line:
// neither half is relayed, both leaves are announced, and the two left chat on.
TEST(L06_Chat, AClientLeavingMidLineIsNotHeardAndTheRoomChatsOn) {
    EXPECTS_FIFO_ORDER();
    ChatServerThread server;
    fib::FiberManager manager;
    fib::Waiter waiter;
    std::vector<ChatClient> clients = fill_room(server.port, 4);
    ASSERT_TRUE(clients[0].send("half a li"));
    clients[0].close();
    ASSERT_TRUE(clients[1].send("the other ha"));
    const linger reset{1, 0};
    ::setsockopt(clients[1].fd(), SOL_SOCKET, SO_LINGER, &reset, sizeof reset);
    clients[1].close();
    for (ChatClient* stayer : {&clients[2], &clients[3]}) {
        EXPECT_EQ(stayer->read_line(), left(1));
        EXPECT_EQ(stayer->read_line(), left(2));
    }
    ASSERT_TRUE(clients[2].say("still here"));
    EXPECT_EQ(clients[3].read_line(), said(3, "still here"));
    ASSERT_TRUE(clients[3].say("me too"));
    EXPECT_EQ(clients[2].read_line(), said(4, "me too"));
    EXPECT_TRUE(clients[2].nothing_pending());
    EXPECT_TRUE(clients[3].nothing_pending());
    EXPECT_EQ(server.live->lines_relayed(), 2u);
}

// The rules of chat_lines.hpp hold however TCP cuts the stream: all at once, byte by byte, or
// in random pieces, a stream of random lines (empty ones and ones far over 4 KiB among them)
// gives the same lines, none empty, none over 4096 bytes, together every byte but the newlines.
TEST(L06_Chat, LineSplitterCutsTheSameLinesHoweverTheBytesArrive) {
    std::mt19937 random(5);
    std::string stream, text_bytes;
    for (int line = 0; line < 200; ++line) {
        const std::size_t length = line % 10 == 0 ? random() % 13000 : random() % 100;
        for (std::size_t i = 0; i < length; ++i)
            text_bytes += static_cast<char>('a' + random() % 26);
        stream += text_bytes.substr(text_bytes.size() - length) + "\n";
    }
    auto split = [&](bool random_pieces, std::size_t max_piece) {
        LineSplitter splitter;
        std::vector<std::string> lines;
        for (std::size_t at = 0; at < stream.size();) {
            const std::size_t piece =
                std::min(stream.size() - at, random_pieces ? 1 + random() % max_piece : max_piece);
            splitter.feed(std::string_view(stream).substr(at, piece),
                          [&](std::string_view line) { lines.emplace_back(line); });
            at += piece;
        }
        return lines;
    };
    const std::vector<std::string> whole = split(false, stream.size());
    EXPECT_EQ(split(false, 1), whole);
    EXPECT_EQ(split(true, 5000), whole);
    std::string joined_lines;
    for (const std::string& line : whole) {
        EXPECT_FALSE(line.empty());
        EXPECT_LE(line.size(), LineSplitter::kMaxLine);
        joined_lines += line;
    }
    EXPECT_EQ(joined_lines, text_bytes);
}

// A member's fiber sends its outbox at the top of its loop, then waits on its socket and its
// mail, socket first; when the socket wins, the outbox is sent all the same, so taking it must
// reset the mail too. A mail left set makes the next wait_any return at once, with the socket
// again, and again: the fiber of a client that never stops sending never parks, and on the
// server's thread no other member, no timer and no write deadline runs (the floods of
// L06_ChatHostile then went on for a gigabyte). One turn of that loop with the socket readable:
// the mail is clear, the wait parks, and the fiber queued behind it runs first.
TEST(L06_Chat, TakingTheOutboxResetsTheMailSoAMemberWhoseClientKeepsSendingStillParks) {
    fib::FiberManager manager;
    fib::Waiter waiter;
    int ends[2];
    ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, ends), 0);
    const fib::UniqueFd server_end(ends[0]), client_end(ends[1]);
    ChatRoom room;
    ChatMember member(1, server_end.get());
    room.join(member);  // the welcome: the outbox is no longer empty, and the mail is set
    ASSERT_TRUE(member.mail().flag_set());
    ASSERT_EQ(::send(client_end.get(), "hi\n", 3, MSG_NOSIGNAL), 3);  // the socket wins
    ASSERT_TRUE(member.send_outbox(std::chrono::seconds(1)));
    EXPECT_FALSE(member.mail().flag_set());
    // A set mail would end the wait at once; with it reset, the fiber parks until the
    // Waiter finds the socket readable, which takes switches.
    const std::uint64_t switches = manager.stats().switches;
    const fib::Source sources[] = {{member.socket(), POLLIN}, member.mail()};
    EXPECT_EQ(fib::wait_any(sources).index, 0);
    EXPECT_GT(manager.stats().switches, switches);
    char sent[64] = {};
    EXPECT_EQ(::recv(client_end.get(), sent, sizeof sent, 0), ssize_t(welcome(1, 1).size()));
    EXPECT_EQ(std::string(sent), welcome(1, 1));
    room.leave(member);
}

}  // namespace
