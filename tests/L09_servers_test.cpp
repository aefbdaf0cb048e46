// L09_servers_test.cpp — lesson 9: the servers on a Cluster, with real loopback clients. The
// kernel spreads connections over the threads' SO_REUSEPORT listeners and every echo comes back
// byte for byte; the sharded chat carries every line to every other client on every thread, in
// order per sender, through feeds small enough to park senders; a stop with clients connected
// closes them all and leaks no fd.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cstdio>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "../lessons/09-cluster/shard_echo.hpp"
#include "../lessons/09-cluster/sharded.hpp"
#include "../lessons/09-cluster/sharded_chat.hpp"
#include "L04_echo_harness.hpp"
#include "L06_chat_harness.hpp"
#include "fib/cluster.hpp"
#include "fib/reuse_port.hpp"

namespace {

using l04_echo::Bytes;

// An echo server on each of `threads` threads, on one port; what each served, once stopped.
struct EchoCluster {
    explicit EchoCluster(std::size_t threads)
        : cluster({.threads = threads}), served(threads) {
        std::vector<fib::UniqueFd> listeners = listen_on_every_thread("127.0.0.1", 0, threads);
        port = fib::tcp::local_port(listeners[0].get());
        cluster.start([this, listeners = std::make_shared<std::vector<fib::UniqueFd>>(std::move(listeners))](
                          std::size_t index) {
            ShardEchoServer server(std::move((*listeners)[index]), {});
            serve_until_stopped(server);
            served[index] = server.clients_served();
        });
    }
    void stop() {
        cluster.stop();
        cluster.join();
    }
    fib::Cluster cluster;
    std::uint16_t port = 0;
    std::vector<std::uint64_t> served;
};

struct TestThread {
    fib::FiberManager manager;
    fib::Waiter waiter;
};

}  // namespace

TEST(L09_ReusePort, TwoSocketsShareAPortOnlyWhenBothAskForIt) {
    fib::UniqueFd first = fib::tcp::listen_reuse_port("127.0.0.1", 0);
    const std::uint16_t port = fib::tcp::local_port(first.get());
    EXPECT_THROW(fib::tcp::listen("127.0.0.1", port), std::system_error);  // no SO_REUSEPORT
    fib::UniqueFd second = fib::tcp::listen_reuse_port("127.0.0.1", port);
    EXPECT_EQ(fib::tcp::local_port(second.get()), port);
}

// Whether net.ipv4.tcp_migrate_req (Linux 5.14, off by default) is on: then a closing
// listener's queue moves to another listener of its group instead of being reset.
bool queues_migrate() {
    std::FILE* file = std::fopen("/proc/sys/net/ipv4/tcp_migrate_req", "r");
    if (!file) return false;
    const int on = std::fgetc(file) == '1';
    std::fclose(file);
    return on;
}

// The kernel keeps an accept queue per listener. 32 clients complete their handshakes while
// neither listener accepts; one listener closes: the connections queued on it are reset, not
// handed to the other, which accepts only its own (unless tcp_migrate_req is on).
TEST(L09_ReusePort, ClosingOneListenerResetsTheConnectionsQueuedOnIt) {
    fib::UniqueFd kept = fib::tcp::listen_reuse_port("127.0.0.1", 0);
    const std::uint16_t port = fib::tcp::local_port(kept.get());
    fib::UniqueFd closing = fib::tcp::listen_reuse_port("127.0.0.1", port);
    std::vector<fib::UniqueFd> clients;
    for (int c = 0; c < 32; ++c) {
        clients.push_back(l04_echo::blocking_socket());
        ASSERT_TRUE(l04_echo::connect_to(clients.back().get(), port));  // queued, not accepted
    }
    closing.reset();
    std::vector<fib::UniqueFd> accepted_sockets;  // kept open: a close would look like a reset
    while (fib::UniqueFd socket{::accept4(kept.get(), nullptr, nullptr, SOCK_CLOEXEC)})
        accepted_sockets.push_back(std::move(socket));
    const int accepted = static_cast<int>(accepted_sockets.size());
    int reset = 0;
    for (fib::UniqueFd& client : clients) {
        char byte;
        if (::recv(client.get(), &byte, 1, MSG_DONTWAIT) < 0 && errno == ECONNRESET) ++reset;
    }
    if (queues_migrate()) {
        EXPECT_EQ(accepted, 32);  // every connection moved to the listener that stayed
        EXPECT_EQ(reset, 0);
        return;
    }
    EXPECT_GT(accepted, 0);
    EXPECT_LT(accepted, 32);
    EXPECT_EQ(reset, 32 - accepted);
}

// 64 clients, each its own random bytes; the kernel's hash puts some on each thread
// (all on one would have odds of 2^-63) and each echo comes back intact.
TEST(L09_ReusePort, ConnectionsSpreadOverEveryThreadAndEveryEchoIsExact) {
    EchoCluster servers(2);
    constexpr int kClients = 64;
    std::atomic<int> intact{0};
    {
        TestThread here;
        std::vector<fib::Fiber> clients;
        for (int c = 0; c < kClients; ++c)
            clients.emplace_back([&, c] {
                std::mt19937_64 random(c);
                const Bytes payload = l04_echo::random_bytes(100'000 + 997 * c, random);
                if (l04_echo::round_trip(servers.port, payload)) ++intact;
            });
        for (fib::Fiber& client : clients) client.join();
    }
    servers.stop();
    EXPECT_EQ(intact.load(), kClients);
    EXPECT_EQ(servers.served[0] + servers.served[1], static_cast<std::uint64_t>(kClients));
    EXPECT_GT(servers.served[0], 0u);
    EXPECT_GT(servers.served[1], 0u);
    std::printf("connections per thread: %llu %llu\n", static_cast<unsigned long long>(servers.served[0]),
                static_cast<unsigned long long>(servers.served[1]));
}

// Clients connected and idle, another mid-echo: the stop closes every one, each thread ends,
// and the process holds exactly the fds it held before the servers existed.
TEST(L09_ReusePort, AStopWithClientsConnectedClosesThemAllAndLeaksNoFd) {
    const std::set<int> before = l04_echo::open_fds();
    {
        EchoCluster servers(2);
        std::vector<fib::UniqueFd> clients;
        for (int c = 0; c < 20; ++c) {
            clients.push_back(l04_echo::blocking_socket());
            ASSERT_TRUE(l04_echo::connect_to(clients.back().get(), servers.port));
            ASSERT_TRUE(l04_echo::blocking_echo(clients.back().get(), 100));  // served, so accepted
        }
        servers.stop();
        EXPECT_EQ(servers.served[0] + servers.served[1], 20u);
        for (fib::UniqueFd& client : clients) {
            char byte;
            EXPECT_EQ(::recv(client.get(), &byte, 1, 0), 0);  // the server closed it
        }
    }
    EXPECT_EQ(l04_echo::open_fds(), before);
}

namespace {

// "*** you are user 7 on thread 1; 3 in the room": the user's number and its thread.
std::pair<int, int> user_and_thread(const std::string& welcome) {
    int user = -1, thread = -1;
    std::sscanf(welcome.c_str(), "*** you are user %d on thread %d;", &user, &thread);
    return {user, thread};
}

}  // namespace

// Clients on both threads (connected until each thread has three), feeds of 4 lines so
// that senders park. Each client says 300 numbered lines while it reads; each must get every
// other client's 300, each sender's in order, none dropped. Then a stop with all of them
// still connected closes each.
TEST(L09_ShardedChat, EveryLineReachesEveryOtherClientOnEveryThreadInOrderPerSender) {
    constexpr int kLines = 300;
    fib::Cluster cluster({.threads = 2});
    std::vector<fib::UniqueFd> listeners = listen_on_every_thread("127.0.0.1", 0, 2);
    const std::uint16_t port = fib::tcp::local_port(listeners[0].get());
    ChatCluster chat(2, std::move(listeners), {.quiet = true, .feed_capacity = 4});
    cluster.start([&](std::size_t index) { chat.serve(index); });

    struct Member {
        explicit Member(std::uint16_t port) : client(port) {}
        l05_chat::ChatClient client;
        int user = -1;
        std::map<int, int> next;  // sender's user number -> the line number expected next
        int got = 0, wrong = 0;
    };
    TestThread here;
    std::vector<std::unique_ptr<Member>> members;
    std::array<int, 2> on_thread{};
    fib::Fiber([&] {
        while ((on_thread[0] < 3 || on_thread[1] < 3) && members.size() < 64) {
            members.push_back(std::make_unique<Member>(port));
            const std::optional<std::string> welcome = members.back()->client.read_line();
            ASSERT_TRUE(welcome.has_value());
            const auto [user, thread] = user_and_thread(*welcome);
            ASSERT_TRUE(thread == 0 || thread == 1) << *welcome;
            members.back()->user = user;
            ++on_thread[thread];
        }
    }).join();
    ASSERT_GE(on_thread[0], 3);
    ASSERT_GE(on_thread[1], 3);
    const int expected = static_cast<int>(members.size() - 1) * kLines;

    std::vector<fib::Fiber> fibers;
    for (std::unique_ptr<Member>& member : members) {
        Member& m = *member;
        fibers.emplace_back([&m, expected] {
            while (m.got < expected) {
                const std::optional<std::string> line = m.client.read_line();
                if (!line) break;
                int sender = 0, number = 0;
                if (line->starts_with("*** ")) {
                    if (line->find("joined") == std::string::npos) ++m.wrong;  // a drop notice, or a leave
                    continue;
                }
                if (std::sscanf(line->c_str(), "user %d: %d", &sender, &number) != 2 || sender == m.user ||
                    number != m.next[sender]++)
                    ++m.wrong;
                ++m.got;
            }
        });
        fibers.emplace_back([&m] {
            for (int k = 0; k < kLines; ++k)
                if (!m.client.say(std::to_string(k))) return;
        });
    }
    for (fib::Fiber& fiber : fibers) fiber.join();
    for (const std::unique_ptr<Member>& m : members) {
        EXPECT_EQ(m->got, expected) << "user " << m->user;
        EXPECT_EQ(m->wrong, 0) << "user " << m->user;
        EXPECT_EQ(m->next.size(), members.size() - 1) << "user " << m->user;
    }
    EXPECT_EQ(chat.lines_said(), members.size() * kLines);
    EXPECT_EQ(chat.lines_dropped(), 0u);

    cluster.stop();
    cluster.join();
    for (std::unique_ptr<Member>& m : members) EXPECT_TRUE(m->client.read_until_closed());  // on main
}
