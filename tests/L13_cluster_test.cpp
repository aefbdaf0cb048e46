// L13_cluster_test.cpp — lesson 13: the per-core variant. Each key lands on the thread thread_of()
// names, whichever thread the client is served by; keys on several threads are refused with
// CROSSSLOT, and a {tag} puts them together; KEYS, DBSIZE and PUBLISH reach every thread; a BLPOP
// forwarded to another thread is served by a push from any client; a stop with clients blocked in
// forwarded BLPOPs ends every thread. Run under TSan too (make TSAN=1 test-lesson13).
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "../lessons/13-redis/kv_cluster.hpp"
#include "../lessons/13-redis/resp_client.hpp"
#include "fib/scope.hpp"
#include "fib/waiter.hpp"

namespace {

KvOptions any_port() {
    KvOptions options;
    options.port = 0;
    options.quiet = true;
    return options;
}

// The test's own thread is a client: a FiberManager and a Waiter of its own.
struct ClientThread {
    fib::FiberManager manager;
    fib::Waiter waiter;
};

std::string ask(RespClient& client, std::initializer_list<std::string_view> request) {
    client.send(RespClient::request(request));
    return client.reply();
}

TEST(L13_Cluster, EachKeyLandsOnItsThreadWhicheverThreadServesTheClient) {
    KvCluster cluster(any_port(), 2);
    cluster.start();
    {
        ClientThread self;
        std::vector<std::unique_ptr<RespClient>> clients;
        for (int i = 0; i < 4; ++i) clients.push_back(std::make_unique<RespClient>(cluster.port()));
        for (int i = 0; i < 100; ++i) {
            const std::string key = "key:" + std::to_string(i);
            EXPECT_EQ(ask(*clients[i % 4], {"SET", key, "value" + std::to_string(i)}), "OK");
        }
        for (int i = 0; i < 100; ++i) {
            const std::string key = "key:" + std::to_string(i);
            EXPECT_EQ(ask(*clients[(i + 1) % 4], {"GET", key}), "\"value" + std::to_string(i) + "\"");
        }
        EXPECT_EQ(ask(*clients[0], {"DBSIZE"}), "(integer) 100");
        const std::string keys = ask(*clients[1], {"KEYS", "key:9*"});
        EXPECT_EQ(std::count(keys.begin(), keys.end(), ','), 10);  // key:9 and key:90..99: 11 of them
    }
    cluster.stop();
    std::size_t total = 0;
    for (std::size_t thread = 0; thread < 2; ++thread) {
        const kv::Store& store = cluster.store(thread);
        store.keyspace.for_each_live_key(kv::clock_now(), [&](const std::string& key) {
            EXPECT_EQ(thread_of(key, 2), thread) << key;
        });
        total += store.keyspace.size();
    }
    EXPECT_EQ(total, 100u);
}

TEST(L13_Cluster, KeysOnSeveralThreadsAreRefusedAndATagPutsThemTogether) {
    // Two keys that hash to different threads, found by trying.
    std::string a = "a", b;
    for (int i = 0; b.empty(); ++i)
        if (thread_of("b" + std::to_string(i), 2) != thread_of(a, 2)) b = "b" + std::to_string(i);
    KvCluster cluster(any_port(), 2);
    cluster.start();
    {
        ClientThread self;
        RespClient client(cluster.port());
        const std::string crossslot = "(error) CROSSSLOT Keys in request don't hash to the same slot";
        EXPECT_EQ(ask(client, {"MSET", a, "1", b, "2"}), crossslot);
        EXPECT_EQ(ask(client, {"EXISTS", a}), "(integer) 0");  // nothing was set
        EXPECT_EQ(ask(client, {"MSET", "{user}" + a, "1", "{user}" + b, "2"}), "OK");
        EXPECT_EQ(ask(client, {"MGET", "{user}" + a, "{user}" + b}), "[\"1\", \"2\"]");
        EXPECT_EQ(ask(client, {"DEL", "{user}" + a, "{user}" + b}), "(integer) 2");
    }
    cluster.stop();
}

// Subscribers are spread over the threads by the kernel; a PUBLISH from any
// client reaches them all, and its count is the sum over the threads.
TEST(L13_Cluster, APublishReachesTheSubscribersOfEveryThread) {
    KvCluster cluster(any_port(), 2);
    cluster.start();
    {
        ClientThread self;
        std::vector<std::unique_ptr<RespClient>> subscribers;
        for (int i = 0; i < 8; ++i) {
            subscribers.push_back(std::make_unique<RespClient>(cluster.port()));
            EXPECT_EQ(ask(*subscribers.back(), {"SUBSCRIBE", "news"}), "[\"subscribe\", \"news\", (integer) 1]");
        }
        RespClient publisher(cluster.port());
        EXPECT_EQ(ask(publisher, {"PUBLISH", "news", "hello"}), "(integer) 8");
        for (auto& subscriber : subscribers) EXPECT_EQ(subscriber->reply(), "[\"message\", \"news\", \"hello\"]");
    }
    cluster.stop();
    EXPECT_EQ(cluster.served(0) + cluster.served(1), 9u);
}

// Clients blocked on keys of both threads, whichever thread serves them; a
// push from another client serves each, in the order they blocked.
TEST(L13_Cluster, ForwardedBlpopsAreServedByPushesFromAnyClient) {
    KvCluster cluster(any_port(), 2);
    cluster.start();
    {
        ClientThread self;
        std::vector<std::string> got(6);
        fib::scope([&](fib::Scope& clients) {
            RespClient pusher(cluster.port());
            for (std::size_t i = 0; i < got.size(); ++i) {
                clients.spawn({.name = "blocked"}, [&, i] {
                    RespClient client(cluster.port());
                    got[i] = ask(client, {"BLPOP", i % 2 ? "odd" : "even", "0"});
                });
                // Until it has blocked, on whichever thread holds its key: the order is the test.
                for (int polls = 0; cluster.blocked_clients() < i + 1 && polls < 10'000; ++polls) fib::this_fiber::yield();
            }
            EXPECT_EQ(ask(pusher, {"RPUSH", "even", "e0", "e1", "e2"}), "(integer) 3");
            EXPECT_EQ(ask(pusher, {"RPUSH", "odd", "o0", "o1", "o2"}), "(integer) 3");
        });
        EXPECT_EQ(got, (std::vector<std::string>{"[\"even\", \"e0\"]", "[\"odd\", \"o0\"]", "[\"even\", \"e1\"]",
                                                 "[\"odd\", \"o1\"]", "[\"even\", \"e2\"]", "[\"odd\", \"o2\"]"}));
    }
    cluster.stop();
}

// The stop reaches a client blocked in a BLPOP forwarded to the other
// thread: the waiting fiber there is cancelled, its reply goes home, and
// every thread ends.
TEST(L13_Cluster, TheStopEndsClientsBlockedInForwardedBlpops) {
    KvCluster cluster(any_port(), 2);
    cluster.start();
    ClientThread self;
    std::vector<std::unique_ptr<RespClient>> clients;
    for (int i = 0; i < 4; ++i) {
        clients.push_back(std::make_unique<RespClient>(cluster.port()));
        clients.back()->send(RespClient::request({"BLPOP", "list" + std::to_string(i), "0"}));
    }
    while (cluster.blocked_clients() < 4) fib::this_fiber::yield();
    cluster.stop();
    for (auto& client : clients) {
        const std::string last = client->reply();
        EXPECT_TRUE(last == "(closed)" || last == "(nil array)") << last;
    }
}

}  // namespace
