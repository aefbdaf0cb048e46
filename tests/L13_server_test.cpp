// L13_server_test.cpp — lesson 13: KvServer over real loopback sockets: pipelines, requests split byte
// by byte, binary-safe and inline requests, QUIT; hostile clients (absurd lengths, garbage, a client
// that pipelines and never reads), each closed while another client is served; SAVE and its file;
// the active expiry. The blocked clients, pub/sub and the stop are in L13_blocking_test.cpp.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <random>
#include <string>
#include <vector>

#include "../lessons/13-redis/snapshot.hpp"
#include "L13_client.hpp"

namespace {

using namespace std::string_literals;
using namespace l13;

const std::string kOk = "+OK\r\n";
const std::string kPong = "+PONG\r\n";

// A value of `size` bytes set straight into the keyspace, on the server's thread.
void set_on_server(KvServerThread& server, const std::string& key, std::string value) {
    server.on_server([&] { server.store().keyspace.set(key, std::move(value)); });
}

// ---- L13_Server: what a well-behaved client sends ---------------------------------------------

// 10,000 requests in one write: the server reads them 64 KiB at a time, runs them in order and
// sends each batch's replies with one send. Every reply is checked, in order.
TEST(L13_Server, APipelineOfTenThousandCommandsGetsEveryReplyInOrder) {
    KvServerThread server;
    Client client(server.port);
    std::string requests;
    std::vector<std::string> expected;
    for (int i = 0; i < 10'000; ++i) {
        const std::string key = "key:" + std::to_string(i / 2), value = "value:" + std::to_string(i / 2);
        requests += i % 2 == 0 ? request({"SET", key, value}) : request({"GET", key});
        expected.push_back(i % 2 == 0 ? kOk : bulk(value));
    }
    ASSERT_TRUE(client.send(requests));
    for (int i = 0; i < 10'000; ++i) ASSERT_EQ(client.reply(), expected[i]) << "reply " << i;
    EXPECT_FALSE(client.anything_arrived());
}

// Each byte is sent alone (TCP_NODELAY) and the next only once the server has read it (its end
// of the socket holds nothing unread): the parser sees the request in 31 reads, and one reply
// comes, after the last byte only.
TEST(L13_Server, ACommandSplitByteByByteGetsOneReply) {
    KvServerThread server;
    Client client(server.port);
    client.no_delay();
    int server_end = -1;
    ASSERT_TRUE(server.eventually_on_server([&] { return (server_end = server_end_of(client)) >= 0; }));
    const std::string bytes = request({"SET", "k", "v"});
    for (std::size_t i = 0; i < bytes.size(); ++i) {
        ASSERT_TRUE(client.send(bytes.substr(i, 1)));
        ASSERT_TRUE(server.eventually_on_server([&] { return unread_bytes(server_end) == 0; })) << "byte " << i;
        if (i + 1 < bytes.size()) {
            ASSERT_FALSE(client.anything_arrived()) << "a reply after byte " << i;
        }
    }
    EXPECT_EQ(client.reply(), kOk);
    EXPECT_EQ(client.command({"GET", "k"}), bulk("v"));
}

TEST(L13_Server, KeysAndValuesWithCrLfAndNulAreKeptByteForByte) {
    KvServerThread server;
    Client client(server.port);
    const std::string key = "k\r\n\0ey\r\n"s, value = "\0v\r\n\r\nal\0ue\n"s;
    EXPECT_EQ(client.command({"SET", key, value}), kOk);
    EXPECT_EQ(client.command({"GET", key}), bulk(value));
    EXPECT_EQ(client.command({"RPUSH", value, key, ""}), integer(2));
    EXPECT_EQ(client.command({"LRANGE", value, "0", "-1"}), array({bulk(key), bulk("")}));
    EXPECT_EQ(client.command({"EXISTS", "k"}), integer(0));
}

// What telnet sends: lines, without the array framing.
TEST(L13_Server, InlineCommandsAsTelnetSendsThem) {
    KvServerThread server;
    Client client(server.port);
    ASSERT_TRUE(client.send("PING\r\nSET k v\r\nGET k\r\nECHO \"a b\"\r\n"));
    EXPECT_EQ(client.reply(), kPong);
    EXPECT_EQ(client.reply(), kOk);
    EXPECT_EQ(client.reply(), bulk("v"));
    EXPECT_EQ(client.reply(), bulk("a b"));
}

TEST(L13_Server, QuitRepliesOkThenCloses) {
    KvServerThread server;
    Client client(server.port);
    ASSERT_TRUE(client.send("SET k v\r\nQUIT\r\nSET k w\r\n"));
    EXPECT_EQ(client.reply(), kOk);
    EXPECT_EQ(client.reply(), kOk);
    EXPECT_TRUE(client.closed_by_server());
    EXPECT_EQ(client.received, "");  // the request after QUIT is never run
    EXPECT_EQ(Client(server.port).command({"GET", "k"}), bulk("v"));
    EXPECT_TRUE(wait_until([&] { return server.counts().quit.load() == 1; }));
}

// The pitfall of the thread's read buffer, which every client reads into: client A's read holds
// a BLPOP and a SET; the BLPOP parks A's fiber in the middle of that batch, and B's read then
// fills the same buffer. A's SET must still be A's bytes: the reader hands the whole read to its
// parser before it runs a command (KvConnection::read_commands).
TEST(L13_Server, ABatchParkedInTheMiddleKeepsItsBytesWhileOthersReadIntoTheSharedBuffer) {
    KvServerThread server;
    Client a(server.port), b(server.port);
    ASSERT_TRUE(a.send("BLPOP q 0\r\nSET a mine-mine-mine\r\n"));
    ASSERT_TRUE(wait_until([&] { return server.on_server([&] { return server.store().blocked.waiters(); }) == 1; }));
    ASSERT_TRUE(b.send("SET b theirs-theirs-theirs-theirs-theirs\r\nGET b\r\n"));
    EXPECT_EQ(b.reply(), kOk);
    EXPECT_EQ(b.reply(), bulk("theirs-theirs-theirs-theirs-theirs"));
    EXPECT_EQ(b.command({"RPUSH", "q", "x"}), integer(1));
    EXPECT_EQ(a.reply(), array({bulk("q"), bulk("x")}));
    EXPECT_EQ(a.reply(), kOk);
    EXPECT_EQ(a.command({"GET", "a"}), bulk("mine-mine-mine"));
    EXPECT_EQ(b.command({"GET", "b"}), bulk("theirs-theirs-theirs-theirs-theirs"));
}

// The pitfall of two fibers sending on one socket: a reply bigger than the server's send buffer
// can grow to (tcp_wmem's maximum) leaves the writer with the rest, while the reader runs the
// client's PINGs (pause_output is raised above the reply) and must leave their replies to the
// writer's next turn. The client reads 16 KiB, sends a PING, and so on: each read makes room in
// the kernel that either fiber could fill. The stream must be the bulk, whole, then the PONGs.
TEST(L13_Server, RepliesRunWhileTheWriterSendsLeaveInOrder) {
    KvLimits limits;
    limits.pause_output = 64 * 1024 * 1024;
    KvServerThread server(test_options(limits));
    const std::string big(l04_echo::kernel_buffer_max("tcp_wmem") + 1024 * 1024, 'b');
    set_on_server(server, "big", big);
    Client client(server.port, 16 * 1024);
    std::string expected;
    int pings = 0;
    for (int round = 0; round < 2; ++round) {
        ASSERT_TRUE(client.send("GET big\r\n"));
        expected += bulk(big);
        for (std::size_t have = client.received.size(); have < expected.size(); have = client.received.size()) {
            ASSERT_GT(client.receive_some(16 * 1024), 0);
            ASSERT_TRUE(client.send("PING\r\n"));
            ++pings;
        }
        while (client.received.size() < expected.size() + kPong.size() * pings) ASSERT_GT(client.receive_some(), 0);
        for (; pings > 0; --pings) expected += kPong;
    }
    ASSERT_EQ(client.received.size(), expected.size());
    EXPECT_TRUE(client.received == expected) << "the bytes of the replies were interleaved";
}

// Keys with a short expiry that nobody reads again: DBSIZE counts them until the active expiry
// fiber has sampled and deleted them (DBSIZE itself looks at no key).
TEST(L13_Server, KeysThatExpireUnreadLeaveDbsizeByTheActiveExpiry) {
    KvServerThread server;
    Client client(server.port);
    std::string requests;
    for (int i = 0; i < 100; ++i) requests += request({"SET", "k" + std::to_string(i), "v", "PX", "20"});
    requests += request({"SET", "stays", "v"});
    ASSERT_TRUE(client.send(requests));
    for (int i = 0; i <= 100; ++i) ASSERT_EQ(client.reply(), kOk);
    EXPECT_TRUE(wait_until([&] { return client.command({"DBSIZE"}) == integer(1); }));
    EXPECT_EQ(client.command({"GET", "stays"}), bulk("v"));
}

// ---- L13_Hostile: clients that try to make the server hold what they merely claim ------------

// Another client, connected before the hostile one and served after it.
void expect_served(Client& other) {
    EXPECT_EQ(other.command({"SET", "other", "fine"}), kOk);
    EXPECT_EQ(other.command({"GET", "other"}), bulk("fine"));
}

TEST(L13_Hostile, ABulkLengthOfTwoToTheSixtyThirdIsAnErrorThenTheConnectionCloses) {
    KvServerThread server;
    Client other(server.port), hostile(server.port);
    ASSERT_TRUE(hostile.send("*1\r\n$9223372036854775808\r\n"));
    EXPECT_EQ(hostile.reply(), error("ERR Protocol error: invalid bulk length"));
    EXPECT_TRUE(hostile.closed_by_server());
    EXPECT_EQ(hostile.received, "");
    expect_served(other);
    EXPECT_TRUE(wait_until([&] { return server.counts().protocol_errors.load() == 1; }));
}

// A billion arguments announced: refused at the count's line, before anything is allocated for
// them; the connection is gone from the server (one client left, the other).
TEST(L13_Hostile, ABillionArgumentsAreRefusedAtTheCountAndTheServerHoldsNothing) {
    KvServerThread server;
    Client other(server.port), hostile(server.port);
    ASSERT_TRUE(hostile.send("*1000000000\r\n"));
    EXPECT_EQ(hostile.reply(), error("ERR Protocol error: invalid multibulk length"));
    EXPECT_TRUE(hostile.closed_by_server());
    EXPECT_TRUE(wait_until([&] { return server.live->server.clients_connected() == 1; }));
    expect_served(other);
}

// A megabyte of random bytes (the same every run): whatever lines the server makes of it are
// errors, the last a protocol error, and then the connection closes.
TEST(L13_Hostile, AMegabyteOfGarbageGetsErrorsThenTheConnectionCloses) {
    KvServerThread server;
    Client other(server.port), hostile(server.port);
    std::mt19937_64 random(13);
    const l04_echo::Bytes garbage = l04_echo::random_bytes(1024 * 1024, random);
    hostile.send({reinterpret_cast<const char*>(garbage.data()), garbage.size()});  // may fail: the server closes
    EXPECT_TRUE(hostile.closed_by_server());
    std::string last;
    int replies = 0;
    for (std::string reply = hostile.reply(); reply != "(closed)" && reply != "(timed out)"; reply = hostile.reply()) {
        EXPECT_EQ(reply[0], '-') << reply;
        last = reply;
        ++replies;
    }
    EXPECT_GE(replies, 1);
    EXPECT_EQ(last.rfind("-ERR Protocol error: ", 0), 0u) << last;
    expect_served(other);
    EXPECT_TRUE(wait_until([&] { return server.counts().protocol_errors.load() == 1; }));
}

// A client pipelines 50 pairs of INCR n and GET of a 1 MiB value and never reads. Its requests
// are a few hundred bytes, all read at once; what bounds the server is pause_output: after a GET
// leaves more than that waiting, its reader runs nothing more until the writer has sent it. So
// at any moment, what the server holds for it (what its commands produced less what the kernel
// took: the client's receive queue and the server's send queue) is at most pause_output and
// one reply, however big the kernel's buffers are. The write deadline then closes it.
TEST(L13_Hostile, AClientThatPipelinesBigRepliesAndNeverReadsIsPausedThenClosed) {
    KvLimits limits;
    limits.pause_output = 64 * 1024;
    limits.write_timeout = std::chrono::milliseconds(100);
    KvServerThread server(test_options(limits));
    const std::string big(1024 * 1024, 'v');
    set_on_server(server, "big", big);
    Client other(server.port), hostile(server.port, 4096);
    int server_end = -1;
    ASSERT_TRUE(server.eventually_on_server([&] { return (server_end = server_end_of(hostile)) >= 0; }));
    std::string requests;
    for (int i = 0; i < 50; ++i) requests += "INCR n\r\nGET big\r\n";
    ASSERT_TRUE(hostile.send(requests));
    const long long reply_size = static_cast<long long>(bulk(big).size() + integer(50).size());
    long long most_held = 0, pairs_run = 0;
    auto look = [&] {
        if (server.counts().slow_readers.load() != 0) return true;  // closed: its fd may be gone
        kv::Value* const n = server.store().keyspace.find("n", kv::clock_now());
        pairs_run = n ? std::stoll(std::get<std::string>(*n)) : 0;
        const long long in_kernel = unread_bytes(hostile.fd()) + unsent_bytes(server_end);
        most_held = std::max(most_held, pairs_run * reply_size - in_kernel);
        return false;
    };
    ASSERT_TRUE(wait_until([&] { return server.on_server(look); }));
    EXPECT_LE(most_held, static_cast<long long>(limits.pause_output) + reply_size);
    EXPECT_LT(pairs_run, 50);
    EXPECT_TRUE(hostile.closed_by_server());
    expect_served(other);
}

// ---- L13_Snapshot: SAVE ----------------------------------------------------------------------

std::string temporary_path(const char* name) {
    return testing::TempDir() + "l13_" + std::to_string(::getpid()) + "_" + name;
}

// SAVE's file, read into a fresh Store: strings with any bytes, lists in order, and an expiry
// kept as the time it had left (so at most what it was given, and not yet past).
TEST(L13_Snapshot, SaveWritesAFileThatLoadSnapshotReadsBack) {
    const std::string path = temporary_path("save.resp");
    KvOptions options = test_options();
    options.snapshot_path = path;
    KvServerThread server(options);
    Client client(server.port);
    const std::string text = "a\r\n\0b"s;
    EXPECT_EQ(client.command({"SET", "text", text}), kOk);
    EXPECT_EQ(client.command({"RPUSH", "list", "x", "y", "z"}), integer(3));
    EXPECT_EQ(client.command({"SET", "soon", "v", "PX", "100000"}), kOk);
    EXPECT_EQ(client.command({"SAVE"}), kOk);

    kv::Store loaded;
    EXPECT_EQ(kv::load_snapshot(path, loaded), 4u);  // SET, RPUSH, SET, PEXPIRE
    const kv::TimePoint now = kv::clock_now();
    EXPECT_EQ(loaded.keyspace.size(), 3u);
    EXPECT_EQ(std::get<std::string>(*loaded.keyspace.find("text", now)), text);
    const kv::List* const list = kv::list_of(loaded.keyspace.find("list", now));
    ASSERT_NE(list, nullptr);
    EXPECT_EQ(*list, (kv::List{"x", "y", "z"}));
    const auto expiry = loaded.keyspace.expiry("soon", now);
    ASSERT_TRUE(expiry.has_value());
    EXPECT_GT(*expiry, now);
    EXPECT_LE(*expiry, now + kv::Milliseconds(100000));
    EXPECT_FALSE(loaded.keyspace.expiry("text", now).has_value());
    ::unlink(path.c_str());
}

// SAVE's worker writes while the thread serves. To know the write is under way, the file it
// opens (the temporary one) is a FIFO: its open blocks until this test opens the other end.
// Meanwhile another client is served, over and over; then the test reads the snapshot out of
// the FIFO. (A FIFO cannot be fsynced, so that SAVE ends in Redis's kind of error reply.)
TEST(L13_Snapshot, OtherClientsAreServedWhileSavesWorkerWrites) {
    const std::string path = temporary_path("fifo.resp");
    ASSERT_EQ(::mkfifo((path + ".tmp").c_str(), 0600), 0);
    KvOptions options = test_options();
    options.snapshot_path = path;
    KvServerThread server(options);
    Client saver(server.port), other(server.port);
    EXPECT_EQ(saver.command({"SET", "k", "v"}), kOk);
    ASSERT_TRUE(saver.send(request({"SAVE"})));
    // Read by the server: then it has run SAVE up to its park, the snapshot made.
    ASSERT_TRUE(server.eventually_on_server([&] { return unread_bytes(server_end_of(saver)) == 0; }));
    for (int i = 0; i < 100; ++i) EXPECT_EQ(other.command({"INCR", "n"}), integer(i + 1));
    EXPECT_FALSE(saver.anything_arrived());

    fib::UniqueFd fifo(::open((path + ".tmp").c_str(), O_RDONLY | O_CLOEXEC));
    std::string written;
    char buffer[4096];
    for (ssize_t n; (n = ::read(fifo.get(), buffer, sizeof buffer)) > 0;)
        written.append(buffer, static_cast<std::size_t>(n));
    EXPECT_EQ(written, request({"SET", "k", "v"}));  // as it was at SAVE: n came after
    EXPECT_EQ(saver.reply().rfind("-ERR fsync ", 0), 0u);
    EXPECT_EQ(saver.command({"GET", "k"}), bulk("v"));
    ::unlink((path + ".tmp").c_str());
}

}  // namespace
