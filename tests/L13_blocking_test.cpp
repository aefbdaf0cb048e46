// L13_blocking_test.cpp — lesson 13: KvServer's clients that wait, over real loopback sockets: BLPOP and
// BRPOP served in the order the clients blocked, on several keys, with a timeout, across a hang-up
// and a timeout that races a push; SUBSCRIBE, PUBLISH and a subscriber that never reads while a
// publisher floods; and the server's stop with clients blocked, subscribed and mid-pipeline.
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "L02_schedule.hpp"
#include "L13_client.hpp"

namespace {

using namespace l13;

const std::string kOk = "+OK\r\n";
const std::string kNullArray = "*-1\r\n";

std::size_t waiters(KvServerThread& server) {
    return server.on_server([&] { return server.store().blocked.waiters(); });
}
std::size_t subscribers(KvServerThread& server, const char* channel) {
    return server.on_server([&] { return server.store().channels.subscribers(channel); });
}

// Sends `request` and returns once the server counts `blocked` clients blocked in all.
void block(KvServerThread& server, Client& client, const std::string& request, std::size_t blocked) {
    ASSERT_TRUE(client.send(request));
    ASSERT_TRUE(server.eventually_on_server([&] { return server.store().blocked.waiters() == blocked; })) << request;
}

// ---- L13_Blocking ---------------------------------------------------------------------------

// Each client blocks only once the one before it has, so the order they blocked is 0, 1, 2...;
// one RPUSH of 0..N-1 then serves them from the head, in that order: client i gets element i.
// Each blocked client costs the process three fds (its socket, the server's end, its Event's
// eventfd): the soft limit is raised to the hard one, and N lowered only if that is too low.
TEST(L13_Blocking, AThousandClientsBlockedOnOneKeyAreServedInTheOrderTheyBlocked) {
    rlimit files{};
    ::getrlimit(RLIMIT_NOFILE, &files);
    files.rlim_cur = files.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &files);
    const std::size_t count = std::min<std::size_t>(1000, (files.rlim_cur - 100) / 3);
    if (count < 1000)
        std::printf("only %zu clients: RLIMIT_NOFILE is %llu\n", count, static_cast<unsigned long long>(files.rlim_cur));
    KvServerThread server;
    std::vector<std::unique_ptr<Client>> clients;
    for (std::size_t i = 0; i < count; ++i) {
        clients.push_back(std::make_unique<Client>(server.port));
        block(server, *clients.back(), "BLPOP q 0\r\n", i + 1);
    }
    std::vector<std::string> push{"RPUSH", "q"};
    for (std::size_t i = 0; i < count; ++i) push.push_back(std::to_string(i));
    Client pusher(server.port);
    EXPECT_EQ(pusher.command(push), integer(static_cast<long long>(count)));
    for (std::size_t i = 0; i < count; ++i)
        ASSERT_EQ(clients[i]->reply(), array({bulk("q"), bulk(std::to_string(i))})) << "client " << i;
    EXPECT_EQ(pusher.command({"EXISTS", "q"}), integer(0));
    EXPECT_EQ(waiters(server), 0u);
}

TEST(L13_Blocking, BlockedOnSeveralKeysTheFirstPushedServesAndTheWaiterLeavesEveryQueue) {
    KvServerThread server;
    Client blocked(server.port), pusher(server.port);
    block(server, blocked, "BRPOP a b c 0\r\n", 1);
    EXPECT_EQ(pusher.command({"RPUSH", "b", "first", "last"}), integer(2));
    EXPECT_EQ(blocked.reply(), array({bulk("b"), bulk("last")}));
    EXPECT_EQ(server.on_server([&] {
        const kv::BlockedLists& lists = server.store().blocked;
        return lists.blocked_on("a") + lists.blocked_on("b") + lists.blocked_on("c");
    }), 0u);
    EXPECT_EQ(pusher.command({"RPUSH", "a", "x"}), integer(1));  // nobody takes it
    EXPECT_EQ(pusher.command({"LRANGE", "b", "0", "-1"}), array({bulk("first")}));
}

TEST(L13_Blocking, ATimeoutGivesANullArrayAndAZeroTimeoutWaitsUntilAPush) {
    KvServerThread server;
    Client client(server.port), pusher(server.port);
    EXPECT_EQ(client.command({"BLPOP", "q", "0.05"}), kNullArray);
    EXPECT_EQ(waiters(server), 0u);
    block(server, client, "BLPOP q 0\r\n", 1);
    // The active expiry fiber's timer runs ten times a second; nothing else can end this wait.
    const kv::TimePoint blocked_at = kv::clock_now();
    ASSERT_TRUE(wait_until([&] { return kv::clock_now() > blocked_at + kv::Milliseconds(150); }));
    EXPECT_FALSE(client.anything_arrived());
    EXPECT_EQ(pusher.command({"LPUSH", "q", "x"}), integer(1));
    EXPECT_EQ(client.reply(), array({bulk("q"), bulk("x")}));
}

// A hang-up while blocked ends the wait at once (POLLRDHUP), so the next push goes to the next
// waiter, and with none left stays in the list: no element is lost.
TEST(L13_Blocking, AClientThatHangsUpWhileBlockedLosesNothingOfTheNextPush) {
    KvServerThread server;
    auto leaving = std::make_unique<Client>(server.port);
    Client staying(server.port), pusher(server.port);
    block(server, *leaving, "BLPOP q 0\r\n", 1);
    block(server, staying, "BLPOP q 0\r\n", 2);
    leaving.reset();
    ASSERT_TRUE(wait_until([&] { return waiters(server) == 1; }));
    EXPECT_EQ(pusher.command({"RPUSH", "q", "x"}), integer(1));
    EXPECT_EQ(staying.reply(), array({bulk("q"), bulk("x")}));
    EXPECT_EQ(pusher.command({"RPUSH", "q", "y"}), integer(1));
    EXPECT_EQ(pusher.command({"LRANGE", "q", "0", "-1"}), array({bulk("y")}));
}

TEST(L13_Blocking, TheRepliesPipelinedBeforeABlpopArriveBeforeItBlocks) {
    KvServerThread server;
    Client client(server.port), pusher(server.port);
    block(server, client, "SET a 1\r\nINCR a\r\nBLPOP q 0\r\nGET a\r\n", 1);
    EXPECT_EQ(client.reply(), kOk);
    EXPECT_EQ(client.reply(), integer(2));
    EXPECT_FALSE(client.anything_arrived());
    EXPECT_EQ(pusher.command({"RPUSH", "q", "x"}), integer(1));
    EXPECT_EQ(client.reply(), array({bulk("q"), bulk("x")}));
    EXPECT_EQ(client.reply(), bulk("2"));
}

TEST(L13_Blocking, AWrongTypeAndBadTimeoutsGetRedissErrors) {
    KvServerThread server;
    Client client(server.port);
    EXPECT_EQ(client.command({"SET", "s", "text"}), kOk);
    EXPECT_EQ(client.command({"BLPOP", "s", "0"}),
              error("WRONGTYPE Operation against a key holding the wrong kind of value"));
    EXPECT_EQ(client.command({"BLPOP", "q", "-1"}), error("ERR timeout is negative"));
    EXPECT_EQ(client.command({"BRPOP", "q", "soon"}), error("ERR timeout is not a float or out of range"));
    EXPECT_EQ(client.command({"BLPOP", "q"}), error("ERR wrong number of arguments for 'blpop' command"));
    EXPECT_EQ(waiters(server), 0u);
}

// The pitfall of a timeout that races a push: the server's thread is kept busy (a posted check
// that spins) until the waiter's deadline has passed and the pusher's request has arrived, so
// one turn of the Waiter finds both, and wakes the pusher's reader before it expires the timer.
// The push serves the waiter, still queued, whose timer has fired too: it must still reply with
// its element, not a null, and the element must not stay in the list. (wait_any reports the
// Event, which wins over the deadline; blocking_pop looks at `served` first all the same.)
// The interleaving needs the ready queue's FIFO order: shuffled, the waiter's fiber may run
// first, see its timeout and leave the queue, and the push then stays in the list, which is
// right too (the timeout won), but not the race this test is for.
TEST(L13_Blocking, AWaiterServedAfterItsTimeoutFiredStillGetsItsElement) {
    EXPECTS_FIFO_ORDER();
    KvServerThread server;
    Client client(server.port), pusher(server.port);
    block(server, client, "BLPOP q 0.05\r\n", 1);
    const kv::TimePoint deadline_passed = kv::clock_now() + kv::Milliseconds(51);
    const int pusher_end = server.on_server([&] { return server_end_of(pusher); });
    ASSERT_GE(pusher_end, 0);
    const bool both_ready = server.on_server([&] {
        EXPECT_TRUE(pusher.send("RPUSH q x\r\n"));  // from the server's thread: it has room
        return wait_until([&] {
            return unread_bytes(pusher_end) > 0 && kv::clock_now() > deadline_passed;
        });
    });
    ASSERT_TRUE(both_ready);
    EXPECT_EQ(pusher.reply(), integer(1));
    EXPECT_EQ(client.reply(), array({bulk("q"), bulk("x")}));
    EXPECT_EQ(pusher.command({"EXISTS", "q"}), integer(0));
    EXPECT_EQ(waiters(server), 0u);
}

// ---- L13_PubSub -----------------------------------------------------------------------------

std::string subscription(std::string_view kind, std::string_view channel, long long count) {
    return array({bulk(kind), bulk(channel), integer(count)});
}
std::string message(std::string_view channel, std::string_view text) {
    return array({bulk("message"), bulk(channel), bulk(text)});
}

TEST(L13_PubSub, SubscribeAndUnsubscribeReplyOncePerChannel) {
    KvServerThread server;
    Client client(server.port);
    ASSERT_TRUE(client.send("SUBSCRIBE a b\r\n"));
    EXPECT_EQ(client.reply(), subscription("subscribe", "a", 1));
    EXPECT_EQ(client.reply(), subscription("subscribe", "b", 2));
    EXPECT_EQ(client.command({"SUBSCRIBE", "a"}), subscription("subscribe", "a", 2));
    EXPECT_EQ(client.command({"UNSUBSCRIBE", "a"}), subscription("unsubscribe", "a", 1));
    EXPECT_EQ(client.command({"UNSUBSCRIBE"}), subscription("unsubscribe", "b", 0));
    EXPECT_EQ(client.command({"UNSUBSCRIBE"}), array({bulk("unsubscribe"), "$-1\r\n", integer(0)}));
    EXPECT_EQ(client.command({"GET", "a"}), "$-1\r\n");  // out of subscriber mode
}

TEST(L13_PubSub, SubscriberModeRefusesGetAndAnswersPingAndQuit) {
    KvServerThread server;
    Client client(server.port);
    EXPECT_EQ(client.command({"SUBSCRIBE", "c"}), subscription("subscribe", "c", 1));
    EXPECT_EQ(client.command({"GET", "k"}),
              error("ERR Can't execute 'get': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are "
                    "allowed in this context"));
    EXPECT_EQ(client.command({"PING"}), array({bulk("pong"), bulk("")}));
    EXPECT_EQ(client.command({"PING", "hi"}), array({bulk("pong"), bulk("hi")}));
    EXPECT_EQ(client.command({"QUIT"}), kOk);
    EXPECT_TRUE(client.closed_by_server());
    EXPECT_TRUE(wait_until([&] { return subscribers(server, "c") == 0; }));
}

TEST(L13_PubSub, PublishCountsTheSubscribersAndEachGetsTheMessage) {
    KvServerThread server;
    Client first(server.port), second(server.port), publisher(server.port);
    EXPECT_EQ(publisher.command({"PUBLISH", "c", "nobody"}), integer(0));
    EXPECT_EQ(first.command({"SUBSCRIBE", "c"}), subscription("subscribe", "c", 1));
    EXPECT_EQ(second.command({"SUBSCRIBE", "c", "d"}), subscription("subscribe", "c", 1));
    EXPECT_EQ(second.reply(), subscription("subscribe", "d", 2));
    EXPECT_EQ(publisher.command({"PUBLISH", "c", "hello\r\n"}), integer(2));
    EXPECT_EQ(publisher.command({"PUBLISH", "d", "only"}), integer(1));
    EXPECT_EQ(first.reply(), message("c", "hello\r\n"));
    EXPECT_EQ(second.reply(), message("c", "hello\r\n"));
    EXPECT_EQ(second.reply(), message("d", "only"));
    EXPECT_FALSE(first.anything_arrived());
}

// A subscriber that never reads (a 4 KiB receive buffer) is subscribed first, two that read
// after it; the publisher floods 8 MiB of messages, 32 at a time, reading its replies and the
// readers' messages after each round. Past 64 KiB held, the silent one is dropped, by its own
// fiber: the publisher's walk through the subscribers must not change under it (the pitfall),
// or the subscriber after the dropped one misses that message and the last gets it twice.
TEST(L13_PubSub, ASubscriberThatNeverReadsIsDroppedAndTheOthersGetEveryMessageInOrder) {
    KvLimits limits;
    limits.max_output = 64 * 1024;
    KvServerThread server(test_options(limits));
    Client silent(server.port, 4096), reader(server.port), last_reader(server.port), publisher(server.port);
    for (Client* subscriber : {&silent, &reader, &last_reader})
        EXPECT_EQ(subscriber->command({"SUBSCRIBE", "c"}), subscription("subscribe", "c", 1));
    const std::string padding(1000, '.');
    std::string all_messages;
    long long last_count = 3;
    for (int round = 0, sent = 0; round < 256; ++round) {
        std::string requests;
        std::vector<std::string> texts;
        for (int i = 0; i < 32; ++i, ++sent) {
            texts.push_back(std::to_string(sent) + padding);
            requests += request({"PUBLISH", "c", texts.back()});
        }
        ASSERT_TRUE(publisher.send(requests));
        for (const std::string& text : texts) {
            const std::string count = publisher.reply();
            ASSERT_TRUE(count == integer(3) || count == integer(2)) << count;
            ASSERT_LE(std::stoll(count.substr(1)), last_count);
            last_count = std::stoll(count.substr(1));
            ASSERT_EQ(reader.reply(), message("c", text));
            ASSERT_EQ(last_reader.reply(), message("c", text));
            all_messages += message("c", text);
        }
    }
    EXPECT_EQ(server.counts().over_limit.load(), 1u);
    EXPECT_FALSE(reader.anything_arrived());
    EXPECT_FALSE(last_reader.anything_arrived());
    // What the silent one got before its end: the messages in order, up to where it was cut.
    EXPECT_TRUE(silent.closed_by_server());
    EXPECT_LT(silent.received.size(), all_messages.size());
    EXPECT_TRUE(all_messages.starts_with(silent.received));
    EXPECT_TRUE(wait_until([&] { return subscribers(server, "c") == 2; }));
}

// ---- The stop ---------------------------------------------------------------------------------

// The stop comes while one client is blocked in BLPOP, one is subscribed, one has sent half a
// request, and one is paused with a pipeline of big replies it never reads. serve() returns
// (the Store's BlockedLists would stop the program if a waiter were left), every client reads
// the end of its stream, and no fiber is left.
TEST(L13_Blocking, TheStopEndsClientsBlockedSubscribedAndMidPipelineAndLeavesNoFiber) {
    KvLimits limits;
    limits.pause_output = 64 * 1024;
    KvServerThread server(test_options(limits));
    server.on_server([&] { server.store().keyspace.set("big", std::string(1024 * 1024, 'v')); });
    Client blocked(server.port), subscribed(server.port), halfway(server.port), paused(server.port, 4096);
    block(server, blocked, "BLPOP q 0\r\n", 1);
    EXPECT_EQ(subscribed.command({"SUBSCRIBE", "c"}), subscription("subscribe", "c", 1));
    ASSERT_TRUE(halfway.send("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$5\r\nval"));
    ASSERT_TRUE(server.eventually_on_server([&] { return unread_bytes(server_end_of(halfway)) == 0; }));
    std::string requests;
    for (int i = 0; i < 50; ++i) requests += "GET big\r\n";
    ASSERT_TRUE(paused.send(requests));
    ASSERT_TRUE(server.eventually_on_server([&] {
        const int paused_end = server_end_of(paused);
        return unread_bytes(paused_end) == 0 && unsent_bytes(paused_end) > 0;
    }));
    EXPECT_EQ(server.live->server.clients_connected(), 4u);
    server.stop();
    EXPECT_TRUE(server.after.returned);
    EXPECT_EQ(server.after.manager.records, 0u);
    for (Client* client : {&blocked, &subscribed, &halfway, &paused}) EXPECT_TRUE(client->closed_by_server());
    EXPECT_EQ(blocked.received, "");
    EXPECT_EQ(halfway.received, "");
}

}  // namespace
