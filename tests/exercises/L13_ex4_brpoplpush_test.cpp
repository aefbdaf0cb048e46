// L13_ex4_brpoplpush_test.cpp — lesson 13, exercise 4: BRPOPLPUSH moves the source's last element
// to the destination's head; blocks on an empty source until a push serves it; times out with a
// null bulk; refuses a string source or destination before popping; and its push serves a client
// blocked on the destination.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <variant>

#include "../lessons/13-redis/commands.hpp"
#include "brpoplpush.hpp"
#include "fib/fiber.hpp"
#include "fib/waiter.hpp"

namespace {

// The handler as execute() runs it: one reply, then the clients blocked on
// what it pushed are served.
std::string run(kv::Store& store, kv::Session& session, const resp::Command& command) {
    std::string out;
    resp::Reply reply(out);
    kv::Call call{command, store, store.keyspace, session, reply, kv::clock_now()};
    exercise::brpoplpush_command(call);
    store.blocked.serve(store.keyspace, kv::clock_now());
    return out;
}

std::string run(kv::Store& store, const resp::Command& command) {
    kv::Session session;
    std::string out;
    kv::execute(command, store, session, kv::clock_now(), out);
    return out;
}

TEST(L13_Ex4Brpoplpush, MovesTheSourcesLastElementToTheDestinationsHead) {
    fib::FiberManager manager;
    fib::Waiter waiter;
    kv::Store store;
    kv::Session session;
    run(store, {"RPUSH", "jobs", "a", "b", "c"});
    run(store, {"RPUSH", "working", "x"});
    EXPECT_EQ(run(store, session, {"BRPOPLPUSH", "jobs", "working", "0"}), "$1\r\nc\r\n");
    EXPECT_EQ(run(store, {"LRANGE", "jobs", "0", "-1"}), "*2\r\n$1\r\na\r\n$1\r\nb\r\n");
    EXPECT_EQ(run(store, {"LRANGE", "working", "0", "-1"}), "*2\r\n$1\r\nc\r\n$1\r\nx\r\n");
    // The same list as both: its last element goes round to its head.
    EXPECT_EQ(run(store, session, {"BRPOPLPUSH", "jobs", "jobs", "0"}), "$1\r\nb\r\n");
    EXPECT_EQ(run(store, {"LRANGE", "jobs", "0", "-1"}), "*2\r\n$1\r\nb\r\n$1\r\na\r\n");
    // The last element taken: the source is deleted, as Redis keeps no empty list.
    run(store, session, {"BRPOPLPUSH", "jobs", "working", "0"});
    run(store, session, {"BRPOPLPUSH", "jobs", "working", "0.01"});
    EXPECT_EQ(run(store, {"EXISTS", "jobs"}), ":0\r\n");
}

TEST(L13_Ex4Brpoplpush, AnEmptySourceBlocksUntilAPushServesIt) {
    fib::FiberManager manager;
    fib::Waiter waiter;
    kv::Store store;
    std::string got;
    fib::Fiber worker([&] {
        kv::Session session;
        got = run(store, session, {"BRPOPLPUSH", "jobs", "working", "0"});
    });
    fib::this_fiber::yield();  // the worker has blocked
    EXPECT_EQ(store.blocked.blocked_on("jobs"), 1u);
    run(store, {"LPUSH", "jobs", "job1"});
    worker.join();
    EXPECT_EQ(got, "$4\r\njob1\r\n");
    EXPECT_EQ(run(store, {"LRANGE", "working", "0", "-1"}), "*1\r\n$4\r\njob1\r\n");
    EXPECT_EQ(store.blocked.waiters(), 0u);
}

TEST(L13_Ex4Brpoplpush, ATimeoutRepliesANullBulkAndLeavesNoWaiter) {
    fib::FiberManager manager;
    fib::Waiter waiter;
    kv::Store store;
    kv::Session session;
    EXPECT_EQ(run(store, session, {"BRPOPLPUSH", "jobs", "working", "0.01"}), "$-1\r\n");
    EXPECT_EQ(store.blocked.waiters(), 0u);
    EXPECT_EQ(run(store, {"EXISTS", "working"}), ":0\r\n");
    EXPECT_EQ(run(store, session, {"BRPOPLPUSH", "jobs", "working", "-1"}), "-ERR timeout is negative\r\n");
    EXPECT_EQ(run(store, session, {"BRPOPLPUSH", "jobs", "working", "soon"}),
              "-ERR timeout is not a float or out of range\r\n");
}

TEST(L13_Ex4Brpoplpush, AStringSourceOrDestinationIsRefusedBeforeAnythingIsPopped) {
    fib::FiberManager manager;
    fib::Waiter waiter;
    kv::Store store;
    kv::Session session;
    const std::string wrong_type = "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n";
    run(store, {"SET", "text", "v"});
    run(store, {"RPUSH", "jobs", "a"});
    EXPECT_EQ(run(store, session, {"BRPOPLPUSH", "text", "working", "0"}), wrong_type);
    EXPECT_EQ(run(store, session, {"BRPOPLPUSH", "jobs", "text", "0"}), wrong_type);
    EXPECT_EQ(run(store, {"LRANGE", "jobs", "0", "-1"}), "*1\r\n$1\r\na\r\n");
}

// The moved element lands on a list a second client is blocked on: that
// client is served, in the same turn, and the destination is left empty.
TEST(L13_Ex4Brpoplpush, ThePushToTheDestinationServesAClientBlockedOnIt) {
    fib::FiberManager manager;
    fib::Waiter waiter;
    kv::Store store;
    std::string second;
    fib::Fiber watcher([&] {
        kv::Session session;
        std::string out;
        kv::execute({"BLPOP", "working", "0"}, store, session, kv::clock_now(), out);
        second = out;
    });
    fib::this_fiber::yield();
    run(store, {"RPUSH", "jobs", "job1"});
    kv::Session session;
    EXPECT_EQ(run(store, session, {"BRPOPLPUSH", "jobs", "working", "0"}), "$4\r\njob1\r\n");
    watcher.join();
    EXPECT_EQ(second, "*2\r\n$7\r\nworking\r\n$4\r\njob1\r\n");
    EXPECT_EQ(run(store, {"EXISTS", "working"}), ":0\r\n");
}

}  // namespace
