// main.cpp — lesson 13 demo: the Redis-compatible server and its clients, all as fibers of one thread.
//
// Part 1 feeds the request parser a pipeline seven bytes at a time. Part 2
// starts a KvServer on a free port and sends it a pipeline in one write.
// Part 3 blocks three clients in BLPOP and serves them with one push, in the
// order they blocked. Part 4 publishes to two subscribers, one of which never
// reads: it is closed at its output limit, and the other gets every message.
// Part 5 is a hostile request: Redis's error, then the close. Each client is
// a fiber with its own connection, as each would be its own process.
#include <sys/eventfd.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <string>
#include <string_view>

#include "fib/fiber.hpp"
#include "fib/scope.hpp"
#include "fib/waiter.hpp"
#include "kv_server.hpp"
#include "resp.hpp"
#include "resp_client.hpp"

namespace {

void part1_parser() {
    const std::string_view pipeline =
        "*3\r\n$3\r\nSET\r\n$3\r\nkey\r\n$10\r\ntwo\r\nlines\r\n"
        "*2\r\n$3\r\nGET\r\n$3\r\nkey\r\n"
        "SET greeting \"hello world\"\r\n";
    std::printf("Part 1: a pipeline of %zu bytes, fed to the parser 7 bytes at a time\n", pipeline.size());
    resp::RequestParser parser;
    for (std::size_t at = 0; at < pipeline.size(); at += 7) {
        parser.feed(pipeline.substr(at, 7));
        while (auto command = parser.next()) {
            std::printf("  after byte %3zu: %zu arguments: %s ...\n", std::min(at + 7, pipeline.size()), command->size(),
                        (*command)[0].c_str());
        }
    }
}

void part2_pipeline(std::uint16_t port) {
    std::printf("Part 2: five requests in one write, five replies in order\n");
    RespClient client(port);
    client.send(RespClient::request({"SET", "greeting", "two\r\nlines"}) + RespClient::request({"GET", "greeting"}) +
                RespClient::request({"INCR", "visits"}) + RespClient::request({"INCR", "greeting"}) +
                "LRANGE nothing 0 -1\r\n");  // inline, as telnet sends it
    for (int i = 0; i < 5; ++i) std::printf("  %s\n", client.reply().c_str());
}

void part3_blpop(std::uint16_t port, const kv::Store& store) {
    std::printf("Part 3: three clients block in BLPOP jobs 0; one RPUSH serves them in order\n");
    std::array<std::string, 3> got;
    fib::scope([&](fib::Scope& clients) {
        for (std::size_t i = 0; i < got.size(); ++i) {
            clients.spawn({.name = "worker"}, [&, i] {
                RespClient worker(port);
                worker.send(RespClient::request({"BLPOP", "jobs", "0"}));
                got[i] = worker.reply();
            });
            while (store.blocked.blocked_on("jobs") < i + 1) fib::this_fiber::yield();  // blocked before the next
        }
        RespClient producer(port);
        producer.send(RespClient::request({"RPUSH", "jobs", "first", "second", "third"}));
        std::printf("  RPUSH jobs first second third: %s\n", producer.reply().c_str());
    });
    for (std::size_t i = 0; i < got.size(); ++i) std::printf("  worker %zu: %s\n", i + 1, got[i].c_str());
}

void part4_pubsub(std::uint16_t port, const KvServer& server) {
    std::printf("Part 4: 200 messages of 32 KiB to two subscribers; one never reads\n");
    RespClient reader(port), sleeper(port), publisher(port);
    reader.send(RespClient::request({"SUBSCRIBE", "news"}));
    sleeper.send(RespClient::request({"SUBSCRIBE", "news"}));
    std::printf("  reader: %s\n  sleeper: %s\n", reader.reply().c_str(), sleeper.reply().c_str());
    int received = 0;
    fib::scope([&](fib::Scope& both) {
        both.spawn({.name = "reader"}, [&] {
            while (received < 200 && reader.reply().starts_with("[\"message\"")) ++received;
        });
        const std::string message(32 * 1024, 'x');
        for (int i = 0; i < 200; ++i) {
            publisher.send(RespClient::request({"PUBLISH", "news", message}));
            publisher.reply();
        }
    });
    std::printf("  reader got %d messages; the sleeper was closed at its output limit: %llu client(s)\n", received,
                static_cast<unsigned long long>(server.counts().over_limit.load()));
}

void part5_hostile(std::uint16_t port) {
    std::printf("Part 5: a bulk length of 2^63\n");
    RespClient hostile(port);
    hostile.send("*1\r\n$9223372036854775808\r\n");
    std::printf("  %s\n", hostile.reply().c_str());
    std::printf("  then: %s\n", hostile.reply().c_str());
}

}  // namespace

int main() {
    part1_parser();
    fib::FiberManager manager;
    fib::Waiter waiter;
    kv::Store store;
    KvOptions options;
    options.port = 0;
    options.quiet = true;
    options.limits.max_output = 256 * 1024;
    KvServer server(options, store);
    const fib::UniqueFd stop(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
    fib::scope([&](fib::Scope& demo) {
        demo.spawn({.name = "kv_server"}, [&] { server.serve(stop.get()); });
        part2_pipeline(server.port());
        part3_blpop(server.port(), store);
        part4_pubsub(server.port(), server);
        part5_hostile(server.port());
        const std::uint64_t one = 1;
        if (::write(stop.get(), &one, sizeof one) < 0) std::perror("write");
    });
    std::printf("The server served %llu connections and stopped.\n",
                static_cast<unsigned long long>(server.clients_served()));
    return 0;
}
