// L13_commands_test.cpp — lesson 13: the command layer. Each command's reply bytes, happy and hostile
// (wrong type, wrong arity, INCR at LLONG_MAX, expiry times zero, negative and past overflow, keys and
// values with \r\n and NUL), as Redis sends them; expiry both lazy and by the active cycle, with time
// moved by hand; and Redis's glob rules for KEYS.
#include <gtest/gtest.h>

#include <climits>
#include <string>
#include <string_view>

#include "../lessons/13-redis/commands.hpp"
#include "../lessons/13-redis/glob.hpp"
#include "../lessons/13-redis/keyspace.hpp"
#include "../lessons/13-redis/reply.hpp"

namespace {

using namespace std::string_literals;
using kv::Milliseconds;
using kv::TimePoint;

// A keyspace and one client's session, on a clock that moves only when a test moves it.
class L13_Commands : public ::testing::Test {
protected:
    std::string run(const resp::Command& command) {
        std::string out;
        kv::execute(command, store, session, now, out);
        return out;
    }
    void advance(long long milliseconds) { now += Milliseconds(milliseconds); }

    L13_Commands() { session.id = 7; }

    kv::Store store;
    kv::Keyspace& keyspace = store.keyspace;
    kv::Session session;
    TimePoint now{Milliseconds(1'000'000)};
};

std::string bulk(std::string_view bytes) { return "$" + std::to_string(bytes.size()) + "\r\n" + std::string(bytes) + "\r\n"; }
std::string error(std::string_view message) { return "-" + std::string(message) + "\r\n"; }
std::string integer(long long number) { return ":" + std::to_string(number) + "\r\n"; }
std::string arity_error(std::string_view name) {
    return error("ERR wrong number of arguments for '" + std::string(name) + "' command");
}

const std::string kOk = "+OK\r\n";
const std::string kNull = "$-1\r\n";
const std::string kNullArray = "*-1\r\n";
const std::string kEmptyArray = "*0\r\n";
const std::string kWrongType = error("WRONGTYPE Operation against a key holding the wrong kind of value");
const std::string kNotInteger = error("ERR value is not an integer or out of range");
const std::string kSyntax = error("ERR syntax error");
const std::string kMax = std::to_string(LLONG_MAX);
const std::string kMin = std::to_string(LLONG_MIN);

// ---- The reply writer ----------------------------------------------------------------------

TEST(L13_Reply, EveryTypeIsWrittenAsRedisWritesIt) {
    std::string out;
    resp::Reply reply(out);
    reply.simple("OK");
    reply.error("ERR no");
    reply.integer(LLONG_MIN);
    reply.bulk("a\r\n\0b"s);
    reply.bulk("");
    reply.null_bulk();
    reply.array(2);
    reply.null_array();
    EXPECT_EQ(out, "+OK\r\n-ERR no\r\n:" + kMin + "\r\n$5\r\na\r\n\0b\r\n$0\r\n\r\n$-1\r\n*2\r\n*-1\r\n"s);
}

TEST(L13_Reply, CrOrLfInASimpleStringOrAnErrorBecomesASpace) {
    std::string out;
    resp::Reply reply(out);
    reply.simple("a\r\nb");
    reply.error("ERR x\ny");
    EXPECT_EQ(out, "+a  b\r\n-ERR x y\r\n");
}

// ---- Dispatch: names, arity, unknown commands ---------------------------------------------

TEST_F(L13_Commands, NamesAreTakenInAnyCase) {
    EXPECT_EQ(run({"pInG"}), "+PONG\r\n");
    EXPECT_EQ(run({"config", "get", "SAVE"}), "*2\r\n" + bulk("save") + bulk(""));
}

TEST_F(L13_Commands, AnUnknownCommandIsQuotedWithItsFirstArgumentsAsRedisQuotesIt) {
    EXPECT_EQ(run({"foo"}), error("ERR unknown command 'foo', with args beginning with: "));
    EXPECT_EQ(run({"foo", "a", "b c"}), error("ERR unknown command 'foo', with args beginning with: 'a' 'b c' "));
    EXPECT_EQ(run({"fo\r\no", "x\ny"}), error("ERR unknown command 'fo  o', with args beginning with: 'x y' "));
    EXPECT_EQ(run({"foo", "ab\0cd"s}), error("ERR unknown command 'foo', with args beginning with: 'ab' "));
    // Arguments are quoted while fewer than 128 bytes are written, each cut to what is left.
    const std::string reply = run({"foo", std::string(100, 'a'), std::string(100, 'b'), "c"});
    EXPECT_EQ(reply, error("ERR unknown command 'foo', with args beginning with: '" + std::string(100, 'a') + "' '" +
                           std::string(25, 'b') + "' "));
}

TEST_F(L13_Commands, AWrongArgumentCountNamesTheCommandInLowerCase) {
    EXPECT_EQ(run({"GET"}), arity_error("get"));
    EXPECT_EQ(run({"GET", "a", "b"}), arity_error("get"));
    EXPECT_EQ(run({"SET", "k"}), arity_error("set"));
    EXPECT_EQ(run({"DBSIZE", "x"}), arity_error("dbsize"));
    EXPECT_EQ(run({"LRANGE", "k", "0"}), arity_error("lrange"));
    EXPECT_EQ(run({"PING", "a", "b"}), arity_error("ping"));
    EXPECT_EQ(run({"MSET", "a", "1", "b"}), arity_error("mset"));
    EXPECT_EQ(run({"LPOP", "k", "1", "2"}), arity_error("lpop"));
    EXPECT_EQ(run({"CONFIG"}), arity_error("config"));
    EXPECT_EQ(run({"CONFIG", "GET"}), arity_error("config|get"));
    EXPECT_EQ(run({"CLIENT", "SETNAME"}), arity_error("client|setname"));
    EXPECT_EQ(run({"COMMAND", "COUNT", "x"}), arity_error("command|count"));
}

TEST_F(L13_Commands, AnUnknownSubcommandSaysWhichHelpToAskFor) {
    EXPECT_EQ(run({"CONFIG", "SET", "a", "b"}), error("ERR unknown subcommand 'SET'. Try CONFIG HELP."));
    EXPECT_EQ(run({"client", "kill"}), error("ERR unknown subcommand 'kill'. Try CLIENT HELP."));
    EXPECT_EQ(run({"command", "info"}), error("ERR unknown subcommand 'info'. Try COMMAND HELP."));
}

// ---- Strings -----------------------------------------------------------------------------

TEST_F(L13_Commands, SetAndGetAreBinarySafeInKeyAndValue) {
    const std::string key = "k\r\n\0*1\r\n"s, value = "\0$3\r\nGET\r\n"s;
    EXPECT_EQ(run({"SET", key, value}), kOk);
    EXPECT_EQ(run({"GET", key}), bulk(value));
    EXPECT_EQ(run({"GET", "k"}), kNull);
    EXPECT_EQ(run({"SET", "", ""}), kOk);
    EXPECT_EQ(run({"GET", ""}), bulk(""));
}

TEST_F(L13_Commands, SetNxSetsOnlyAMissingKeyAndXxOnlyAPresentOne) {
    EXPECT_EQ(run({"SET", "k", "1", "XX"}), kNull);
    EXPECT_EQ(run({"EXISTS", "k"}), integer(0));
    EXPECT_EQ(run({"SET", "k", "1", "nx"}), kOk);
    EXPECT_EQ(run({"SET", "k", "2", "NX"}), kNull);
    EXPECT_EQ(run({"SET", "k", "3", "XX"}), kOk);
    EXPECT_EQ(run({"GET", "k"}), bulk("3"));
}

TEST_F(L13_Commands, SetWithGetRepliesTheOldValueAndRefusesAList) {
    EXPECT_EQ(run({"SET", "k", "1", "GET"}), kNull);
    EXPECT_EQ(run({"SET", "k", "2", "GET"}), bulk("1"));
    EXPECT_EQ(run({"SET", "k", "3", "NX", "GET"}), bulk("2"));  // not set: the old value all the same
    EXPECT_EQ(run({"GET", "k"}), bulk("2"));
    run({"RPUSH", "list", "a"});
    EXPECT_EQ(run({"SET", "list", "x", "GET"}), kWrongType);
    EXPECT_EQ(run({"LLEN", "list"}), integer(1));
}

TEST_F(L13_Commands, SetOptionsThatExcludeEachOtherOrLackAValueAreASyntaxError) {
    for (const resp::Command& command : std::vector<resp::Command>{
             {"SET", "k", "v", "NX", "XX"},      {"SET", "k", "v", "EX"},          {"SET", "k", "v", "EX", "1", "PX", "1"},
             {"SET", "k", "v", "KEEPTTL", "EX", "1"}, {"SET", "k", "v", "PX", "1", "KEEPTTL"}, {"SET", "k", "v", "FOO"},
             {"SET", "k", "v", "EX", "0", "junk"}})
        EXPECT_EQ(run(command), kSyntax) << command.back();
    EXPECT_EQ(run({"EXISTS", "k"}), integer(0));
    EXPECT_EQ(run({"SET", "k", "v", "EX", "5", "EX", "10"}), kOk);  // repeated: the last one holds
    EXPECT_EQ(run({"TTL", "k"}), integer(10));
}

// getExpireMillisecondsOrReply: not above zero, seconds whose milliseconds overflow, or a
// time past the clock's range is "invalid expire time"; not a number is "not an integer".
TEST_F(L13_Commands, SetRefusesAnExpiryOfZeroANegativeOneAndOneThatOverflows) {
    const std::string invalid = error("ERR invalid expire time in 'set' command");
    EXPECT_EQ(run({"SET", "k", "v", "EX", "0"}), invalid);
    EXPECT_EQ(run({"SET", "k", "v", "EX", "-1"}), invalid);
    EXPECT_EQ(run({"SET", "k", "v", "PX", "0"}), invalid);
    EXPECT_EQ(run({"SET", "k", "v", "PX", kMin}), invalid);
    EXPECT_EQ(run({"SET", "k", "v", "EX", std::to_string(LLONG_MAX / 1000 + 1)}), invalid);
    EXPECT_EQ(run({"SET", "k", "v", "EX", std::to_string(LLONG_MAX / 1000)}), invalid);  // + now overflows
    EXPECT_EQ(run({"SET", "k", "v", "PX", kMax}), invalid);
    EXPECT_EQ(run({"SET", "k", "v", "EX", "1.5"}), kNotInteger);
    EXPECT_EQ(run({"SET", "k", "v", "PX", "9223372036854775808"}), kNotInteger);
    EXPECT_EQ(run({"EXISTS", "k"}), integer(0));
    EXPECT_EQ(run({"SET", "k", "v", "px", "1500"}), kOk);
    EXPECT_EQ(run({"PTTL", "k"}), integer(1500));
}

TEST_F(L13_Commands, SetForgetsAnExpiryUnlessKeepTtlAndIncrAndPushKeepIt) {
    run({"SET", "k", "1", "EX", "100"});
    EXPECT_EQ(run({"SET", "k", "2", "KEEPTTL"}), kOk);
    EXPECT_EQ(run({"TTL", "k"}), integer(100));
    EXPECT_EQ(run({"INCR", "k"}), integer(3));
    EXPECT_EQ(run({"TTL", "k"}), integer(100));
    EXPECT_EQ(run({"SET", "k", "4"}), kOk);
    EXPECT_EQ(run({"TTL", "k"}), integer(-1));
    run({"RPUSH", "list", "a"});
    run({"EXPIRE", "list", "50"});
    run({"LPUSH", "list", "b"});
    EXPECT_EQ(run({"TTL", "list"}), integer(50));
    run({"MSET", "list", "x"});
    EXPECT_EQ(run({"TTL", "list"}), integer(-1));
}

TEST_F(L13_Commands, IncrAndItsKinCountFromZeroForAMissingKey) {
    EXPECT_EQ(run({"INCR", "n"}), integer(1));
    EXPECT_EQ(run({"INCRBY", "n", "41"}), integer(42));
    EXPECT_EQ(run({"DECR", "n"}), integer(41));
    EXPECT_EQ(run({"DECRBY", "n", "-9"}), integer(50));
    EXPECT_EQ(run({"GET", "n"}), bulk("50"));
    EXPECT_EQ(run({"DECRBY", "m", "5"}), integer(-5));
    EXPECT_EQ(run({"INCRBY", "z", kMin}), integer(LLONG_MIN));
}

TEST_F(L13_Commands, IncrOnAValueThatIsNotAStrictIntegerIsRefused) {
    for (const char* value : {"abc", " 1", "1 ", "+1", "01", "-0", "1.0", "", "9223372036854775808"}) {
        run({"SET", "n", value});
        EXPECT_EQ(run({"INCR", "n"}), kNotInteger) << '"' << value << '"';
        EXPECT_EQ(run({"GET", "n"}), bulk(value));
    }
    EXPECT_EQ(run({"INCRBY", "n", "x"}), kNotInteger);
    EXPECT_EQ(run({"DECRBY", "n", "1e3"}), kNotInteger);
}

TEST_F(L13_Commands, IncrPastLlongMaxAndDecrPastLlongMinOverflowAndChangeNothing) {
    const std::string overflow = error("ERR increment or decrement would overflow");
    run({"SET", "n", kMax});
    EXPECT_EQ(run({"INCR", "n"}), overflow);
    EXPECT_EQ(run({"INCRBY", "n", "1"}), overflow);
    EXPECT_EQ(run({"GET", "n"}), bulk(kMax));
    EXPECT_EQ(run({"INCRBY", "n", "0"}), integer(LLONG_MAX));
    EXPECT_EQ(run({"DECRBY", "n", kMax}), integer(0));
    run({"SET", "n", kMin});
    EXPECT_EQ(run({"DECR", "n"}), overflow);
    EXPECT_EQ(run({"INCRBY", "n", kMin}), overflow);
    EXPECT_EQ(run({"GET", "n"}), bulk(kMin));
    EXPECT_EQ(run({"DECRBY", "n", kMin}), error("ERR decrement would overflow"));
}

TEST_F(L13_Commands, MgetAnswersNullForAMissingKeyOrAListAndMsetSetsEveryPair) {
    EXPECT_EQ(run({"MSET", "a", "1", "b", "2\r\n"}), kOk);
    run({"LPUSH", "list", "x"});
    EXPECT_EQ(run({"MGET", "a", "missing", "list", "b"}), "*4\r\n" + bulk("1") + kNull + kNull + bulk("2\r\n"));
}

// ---- Commands of any key, and expiry ------------------------------------------------------

TEST_F(L13_Commands, DelCountsTheKeysDeletedAndExistsCountsARepeatedKeyTwice) {
    run({"MSET", "a", "1", "b", "2"});
    EXPECT_EQ(run({"EXISTS", "a", "a", "b", "c"}), integer(3));
    EXPECT_EQ(run({"DEL", "a", "a", "c"}), integer(1));
    EXPECT_EQ(run({"EXISTS", "a"}), integer(0));
    EXPECT_EQ(run({"DBSIZE"}), integer(1));
    EXPECT_EQ(run({"FLUSHALL"}), kOk);
    EXPECT_EQ(run({"DBSIZE"}), integer(0));
    EXPECT_EQ(run({"FLUSHALL", "async"}), kOk);
    EXPECT_EQ(run({"FLUSHALL", "now"}), kSyntax);
}

TEST_F(L13_Commands, TtlIsMinusTwoForAMissingKeyMinusOneForAPersistentOneAndRoundsToTheNearestSecond) {
    EXPECT_EQ(run({"TTL", "k"}), integer(-2));
    EXPECT_EQ(run({"PTTL", "k"}), integer(-2));
    run({"SET", "k", "v"});
    EXPECT_EQ(run({"TTL", "k"}), integer(-1));
    EXPECT_EQ(run({"PEXPIRE", "k", "1499"}), integer(1));
    EXPECT_EQ(run({"TTL", "k"}), integer(1));
    EXPECT_EQ(run({"PEXPIRE", "k", "1500"}), integer(1));
    EXPECT_EQ(run({"TTL", "k"}), integer(2));
    EXPECT_EQ(run({"PERSIST", "k"}), integer(1));
    EXPECT_EQ(run({"PERSIST", "k"}), integer(0));
    EXPECT_EQ(run({"PERSIST", "missing"}), integer(0));
    EXPECT_EQ(run({"PTTL", "k"}), integer(-1));
}

// A key lives through the millisecond of its expiry time and is gone at the next: every
// command sees it gone, and it is deleted on that first look (DBSIZE counts it until then).
TEST_F(L13_Commands, AnExpiredKeyIsGoneForEveryCommandAndDeletedWhenFirstLookedAt) {
    run({"SET", "k", "v", "PX", "100"});
    advance(100);
    EXPECT_EQ(run({"PTTL", "k"}), integer(0));
    EXPECT_EQ(run({"GET", "k"}), bulk("v"));
    advance(1);
    EXPECT_EQ(run({"DBSIZE"}), integer(1));
    EXPECT_EQ(run({"KEYS", "*"}), kEmptyArray);
    EXPECT_EQ(run({"GET", "k"}), kNull);
    EXPECT_EQ(run({"DBSIZE"}), integer(0));
    for (const resp::Command& command : std::vector<resp::Command>{
             {"SET", "a", "1", "PX", "1"}, {"RPUSH", "b", "x"}, {"PEXPIRE", "b", "1"}, {"SET", "c", "5", "PX", "1"}})
        run(command);
    advance(2);
    EXPECT_EQ(run({"EXISTS", "a", "b", "c"}), integer(0));
    EXPECT_EQ(run({"SET", "a", "new", "NX"}), kOk);
    EXPECT_EQ(run({"TTL", "a"}), integer(-1));
    EXPECT_EQ(run({"LPUSH", "b", "y"}), integer(1));
    EXPECT_EQ(run({"INCR", "c"}), integer(1));
}

TEST_F(L13_Commands, ExpireAtOrBeforeNowDeletesTheKeyAndAMissingKeyIsZero) {
    EXPECT_EQ(run({"EXPIRE", "k", "10"}), integer(0));
    run({"MSET", "a", "1", "b", "2"});
    EXPECT_EQ(run({"EXPIRE", "a", "0"}), integer(1));
    EXPECT_EQ(run({"PEXPIRE", "b", "-5"}), integer(1));
    EXPECT_EQ(run({"DBSIZE"}), integer(0));
}

// expireGenericCommand: EXPIRE allows negative times; only a conversion or an addition
// that overflows is "invalid expire time", named after the command that was called.
TEST_F(L13_Commands, ExpireTimesThatOverflowAreInvalidWhateverTheKey) {
    EXPECT_EQ(run({"EXPIRE", "k", std::to_string(LLONG_MAX / 1000 + 1)}), error("ERR invalid expire time in 'expire' command"));
    EXPECT_EQ(run({"EXPIRE", "k", std::to_string(LLONG_MIN / 1000 - 1)}), error("ERR invalid expire time in 'expire' command"));
    EXPECT_EQ(run({"PEXPIRE", "k", kMax}), error("ERR invalid expire time in 'pexpire' command"));
    EXPECT_EQ(run({"PEXPIRE", "k", kMin}), integer(0));
    EXPECT_EQ(run({"EXPIRE", "k", "ten"}), kNotInteger);
}

TEST_F(L13_Commands, ExpireConditionsNxXxGtLtAsRedis) {
    run({"SET", "k", "v"});
    EXPECT_EQ(run({"EXPIRE", "k", "100", "XX"}), integer(0));
    EXPECT_EQ(run({"EXPIRE", "k", "100", "GT"}), integer(0));  // no expiry counts as infinite
    EXPECT_EQ(run({"EXPIRE", "k", "100", "nx"}), integer(1));
    EXPECT_EQ(run({"EXPIRE", "k", "200", "NX"}), integer(0));
    EXPECT_EQ(run({"EXPIRE", "k", "50", "GT"}), integer(0));
    EXPECT_EQ(run({"EXPIRE", "k", "200", "GT"}), integer(1));
    EXPECT_EQ(run({"EXPIRE", "k", "300", "LT"}), integer(0));
    EXPECT_EQ(run({"EXPIRE", "k", "150", "LT", "XX"}), integer(1));
    EXPECT_EQ(run({"TTL", "k"}), integer(150));
    EXPECT_EQ(run({"EXPIRE", "k", "1", "NX", "XX"}), error("ERR NX and XX, GT or LT options at the same time are not compatible"));
    EXPECT_EQ(run({"EXPIRE", "k", "1", "GT", "LT"}), error("ERR GT and LT options at the same time are not compatible"));
    EXPECT_EQ(run({"EXPIRE", "k", "1", "FOO"}), error("ERR Unsupported option FOO"));
}

TEST_F(L13_Commands, KeysListsTheLiveKeysThatMatchAndStarListsTheEmptyKeyToo) {
    run({"MSET", "hello", "1", "hallo", "2", "hxllo", "3", "heeeello", "4", "", "5"});
    run({"RPUSH", "h\r\nllo", "x"});
    EXPECT_EQ(run({"KEYS", "h?llo"}).substr(0, 4), "*3\r\n");
    EXPECT_EQ(run({"KEYS", "h[ae]llo"}).substr(0, 4), "*2\r\n");
    EXPECT_EQ(run({"KEYS", "h*llo"}).substr(0, 4), "*5\r\n");
    EXPECT_EQ(run({"KEYS", "*"}).substr(0, 4), "*6\r\n");
    EXPECT_EQ(run({"KEYS", "heee*"}), "*1\r\n" + bulk("heeeello"));
    EXPECT_EQ(run({"KEYS", "nothing*"}), kEmptyArray);
}

// ---- Lists --------------------------------------------------------------------------------

TEST_F(L13_Commands, PushesAnswerTheLengthAndLrangeShowsTheOrder) {
    EXPECT_EQ(run({"LPUSH", "l", "a", "b", "c"}), integer(3));
    EXPECT_EQ(run({"RPUSH", "l", "d\0\r\n"s}), integer(4));
    EXPECT_EQ(run({"LRANGE", "l", "0", "-1"}), "*4\r\n" + bulk("c") + bulk("b") + bulk("a") + bulk("d\0\r\n"s));
    EXPECT_EQ(run({"LLEN", "l"}), integer(4));
    EXPECT_EQ(run({"LLEN", "missing"}), integer(0));
}

TEST_F(L13_Commands, LrangeClipsItsEndsToTheListAsRedisDoes) {
    run({"RPUSH", "l", "0", "1", "2", "3", "4"});
    EXPECT_EQ(run({"LRANGE", "l", "1", "2"}), "*2\r\n" + bulk("1") + bulk("2"));
    EXPECT_EQ(run({"LRANGE", "l", "-2", "100"}), "*2\r\n" + bulk("3") + bulk("4"));
    EXPECT_EQ(run({"LRANGE", "l", "-100", "0"}), "*1\r\n" + bulk("0"));
    EXPECT_EQ(run({"LRANGE", "l", "3", "1"}), kEmptyArray);
    EXPECT_EQ(run({"LRANGE", "l", "5", "10"}), kEmptyArray);
    EXPECT_EQ(run({"LRANGE", "l", "0", "-6"}), kEmptyArray);
    EXPECT_EQ(run({"LRANGE", "l", kMin, kMax}), "*5\r\n" + bulk("0") + bulk("1") + bulk("2") + bulk("3") + bulk("4"));
    EXPECT_EQ(run({"LRANGE", "missing", "0", "-1"}), kEmptyArray);
    EXPECT_EQ(run({"LRANGE", "l", "a", "1"}), kNotInteger);
}

TEST_F(L13_Commands, PopsWithoutACountAnswerABulkAndWithOneAnArrayInTheOrderPopped) {
    run({"RPUSH", "l", "a", "b", "c", "d", "e"});
    EXPECT_EQ(run({"LPOP", "l"}), bulk("a"));
    EXPECT_EQ(run({"RPOP", "l"}), bulk("e"));
    EXPECT_EQ(run({"LPOP", "l", "2"}), "*2\r\n" + bulk("b") + bulk("c"));
    EXPECT_EQ(run({"LPOP", "l", "0"}), kEmptyArray);
    EXPECT_EQ(run({"RPOP", "l", "10"}), "*1\r\n" + bulk("d"));
    EXPECT_EQ(run({"EXISTS", "l"}), integer(0));  // the last element took the key with it
    EXPECT_EQ(run({"LPOP", "l"}), kNull);
    EXPECT_EQ(run({"LPOP", "l", "1"}), kNullArray);
    EXPECT_EQ(run({"RPOP", "l", "0"}), kNullArray);
    run({"RPUSH", "r", "1", "2", "3"});
    EXPECT_EQ(run({"RPOP", "r", "2"}), "*2\r\n" + bulk("3") + bulk("2"));
}

TEST_F(L13_Commands, APopCountThatIsNegativeOrNotANumberIsOutOfRange) {
    const std::string positive = error("ERR value is out of range, must be positive");
    EXPECT_EQ(run({"LPOP", "l", "-1"}), positive);
    EXPECT_EQ(run({"RPOP", "l", "x"}), positive);
}

TEST_F(L13_Commands, AStringCommandOnAListAndAListCommandOnAStringAreWrongType) {
    run({"SET", "s", "v"});
    run({"RPUSH", "l", "x"});
    for (const resp::Command& command : std::vector<resp::Command>{
             {"GET", "l"}, {"INCR", "l"}, {"DECRBY", "l", "2"}, {"LPUSH", "s", "x"}, {"RPUSH", "s", "x"},
             {"LPOP", "s"}, {"RPOP", "s", "2"}, {"LLEN", "s"}, {"LRANGE", "s", "0", "1"}})
        EXPECT_EQ(run(command), kWrongType) << command[0];
    EXPECT_EQ(run({"GET", "s"}), bulk("v"));
    EXPECT_EQ(run({"LLEN", "l"}), integer(1));
    EXPECT_EQ(run({"SET", "l", "now a string"}), kOk);  // SET replaces any type
}

// ---- The connection's commands ------------------------------------------------------------

TEST_F(L13_Commands, PingAndEchoAnswerTheirMessageBinarySafe) {
    EXPECT_EQ(run({"PING"}), "+PONG\r\n");
    EXPECT_EQ(run({"PING", "a\r\nb"}), bulk("a\r\nb"));
    EXPECT_EQ(run({"ECHO", "\0x"s}), bulk("\0x"s));
}

TEST_F(L13_Commands, SelectTakesOnlyDatabaseZero) {
    EXPECT_EQ(run({"SELECT", "0"}), kOk);
    EXPECT_EQ(run({"SELECT", "1"}), error("ERR DB index is out of range"));
    EXPECT_EQ(run({"SELECT", "-1"}), error("ERR DB index is out of range"));
    EXPECT_EQ(run({"SELECT", "2147483648"}), error("ERR value is out of range"));
    EXPECT_EQ(run({"SELECT", "zero"}), kNotInteger);
}

TEST_F(L13_Commands, Hello2AnswersAsRedis7AndHello3IsRefused) {
    const std::string hello = "*14\r\n" + bulk("server") + bulk("redis") + bulk("version") + bulk("7.0.15") + bulk("proto") +
                              integer(2) + bulk("id") + integer(7) + bulk("mode") + bulk("standalone") + bulk("role") +
                              bulk("master") + bulk("modules") + kEmptyArray;
    EXPECT_EQ(run({"HELLO"}), hello);
    EXPECT_EQ(run({"HELLO", "2"}), hello);
    EXPECT_EQ(run({"HELLO", "3"}), error("NOPROTO unsupported protocol version"));
    EXPECT_EQ(run({"HELLO", "1"}), error("NOPROTO unsupported protocol version"));
    EXPECT_EQ(run({"HELLO", "two"}), error("ERR Protocol version is not an integer or out of range"));
    EXPECT_EQ(run({"HELLO", "2", "SETNAME"}), error("ERR Syntax error in HELLO option 'SETNAME'"));
    EXPECT_EQ(run({"HELLO", "2", "AUTH", "someone", "pw"}),
              error("WRONGPASS invalid username-password pair or user is disabled."));
    EXPECT_EQ(run({"HELLO", "2", "AUTH", "default", "pw", "SETNAME", "me"}), hello);
    EXPECT_EQ(run({"CLIENT", "GETNAME"}), bulk("me"));
}

TEST_F(L13_Commands, ClientSetnameTakesPrintableBytesAndAnEmptyNameRemovesIt) {
    EXPECT_EQ(run({"CLIENT", "GETNAME"}), kNull);
    EXPECT_EQ(run({"client", "setname", "worker-1"}), kOk);
    EXPECT_EQ(run({"CLIENT", "GETNAME"}), bulk("worker-1"));
    const std::string invalid = error("ERR Client names cannot contain spaces, newlines or special characters.");
    EXPECT_EQ(run({"CLIENT", "SETNAME", "a b"}), invalid);
    EXPECT_EQ(run({"CLIENT", "SETNAME", "a\nb"}), invalid);
    EXPECT_EQ(run({"CLIENT", "GETNAME"}), bulk("worker-1"));
    EXPECT_EQ(run({"CLIENT", "SETNAME", ""}), kOk);
    EXPECT_EQ(run({"CLIENT", "GETNAME"}), kNull);
}

TEST_F(L13_Commands, CommandAndCommandDocsAreEmptyAndCommandCountIsTheTablesSize) {
    EXPECT_EQ(run({"COMMAND"}), kEmptyArray);
    EXPECT_EQ(run({"COMMAND", "DOCS"}), kEmptyArray);
    EXPECT_EQ(run({"COMMAND", "DOCS", "get"}), kEmptyArray);
    EXPECT_EQ(run({"COMMAND", "COUNT"}), integer(static_cast<long long>(kv::command_table().size())));
    EXPECT_EQ(kv::command_table().size(), 40u);
}

// What client libraries and tools ask on connect or of each key: TYPE, INFO's loading and
// keyspace fields (in Redis's "field:value" lines), CLIENT ID.
TEST_F(L13_Commands, TypeInfoAndClientIdAnswerWhatClientsAsk) {
    run({"SET", "text", "v"});
    run({"RPUSH", "list", "a"});
    run({"PEXPIRE", "list", "100000"});
    EXPECT_EQ(run({"TYPE", "text"}), "+string\r\n");
    EXPECT_EQ(run({"TYPE", "list"}), "+list\r\n");
    EXPECT_EQ(run({"TYPE", "missing"}), "+none\r\n");
    const std::string info = run({"INFO"});
    EXPECT_TRUE(info.starts_with("$")) << info;
    EXPECT_NE(info.find("\r\nloading:0\r\n"), std::string::npos) << info;
    EXPECT_NE(info.find("\r\ndb0:keys=2,expires=1,avg_ttl=0\r\n"), std::string::npos) << info;
    EXPECT_EQ(run({"INFO", "persistence"}), bulk("# Persistence\r\nloading:0\r\n"));
    EXPECT_EQ(run({"INFO", "nosuchsection"}), bulk(""));
    EXPECT_EQ(run({"CLIENT", "ID"}), integer(7));
}

TEST_F(L13_Commands, ConfigGetAnswersSaveAndAppendonlyOnceEach) {
    EXPECT_EQ(run({"CONFIG", "GET", "save"}), "*2\r\n" + bulk("save") + bulk(""));
    EXPECT_EQ(run({"CONFIG", "GET", "appendonly"}), "*2\r\n" + bulk("appendonly") + bulk("no"));
    const std::string both = "*4\r\n" + bulk("save") + bulk("") + bulk("appendonly") + bulk("no");
    EXPECT_EQ(run({"CONFIG", "GET", "*"}), both);
    EXPECT_EQ(run({"CONFIG", "GET", "APPENDONLY", "s?ve", "save"}), both);
    EXPECT_EQ(run({"CONFIG", "GET", "maxmemory"}), kEmptyArray);
}

// ---- The keyspace's expiry -----------------------------------------------------------------

const TimePoint kStart{Milliseconds(1'000'000)};

// `count` keys key0, key1, ..., each with an expiry time: `expired` of them (the first ones)
// 1 ms before kStart, the others an hour after.
void add_expiring_keys(kv::Keyspace& keyspace, int count, int expired) {
    for (int i = 0; i < count; ++i) {
        const std::string key = "key" + std::to_string(i);
        keyspace.set(key, std::string("v"));
        keyspace.set_expiry(key, kStart + Milliseconds(i < expired ? -1 : 3'600'000));
    }
}

TEST(L13_Keyspace, FindDeletesAnExpiredKeyAndSizeCountsItUntilThen) {
    kv::Keyspace keyspace;
    add_expiring_keys(keyspace, 2, 1);
    EXPECT_EQ(keyspace.size(), 2u);
    EXPECT_EQ(keyspace.find("key0", kStart - Milliseconds(1)), &keyspace.set("key0", std::string("v"), true));
    EXPECT_EQ(keyspace.find("key0", kStart), nullptr);
    EXPECT_EQ(keyspace.size(), 1u);
    EXPECT_EQ(keyspace.size_with_expiry(), 1u);
    EXPECT_FALSE(keyspace.erase("key0", kStart));
    EXPECT_TRUE(keyspace.erase("key1", kStart));
    EXPECT_EQ(keyspace.size_with_expiry(), 0u);
}

TEST(L13_Keyspace, SetForgetsTheExpiryUnlessToldToKeepIt) {
    kv::Keyspace keyspace;
    add_expiring_keys(keyspace, 2, 0);
    keyspace.set("key0", std::string("w"));
    keyspace.set("key1", std::string("w"), true);
    EXPECT_EQ(keyspace.expiry("key0", kStart), std::nullopt);
    EXPECT_EQ(keyspace.expiry("key1", kStart), kStart + Milliseconds(3'600'000));
    EXPECT_EQ(keyspace.size_with_expiry(), 1u);
}

// Redis's cycle: rounds of 20, again while a round found more than 10% expired.
TEST(L13_Keyspace, TheActiveCycleStopsAfterARoundWithTenPercentExpiredOrLess) {
    kv::Keyspace few;
    add_expiring_keys(few, 100, 2);  // 2 of the first round's 20: 10%
    const kv::ExpireCycle one_round = few.expire_some(kStart, 1000);
    EXPECT_EQ(one_round.rounds, 1u);
    EXPECT_EQ(one_round.sampled, 20u);
    EXPECT_EQ(one_round.expired, 2u);
    kv::Keyspace more;
    add_expiring_keys(more, 100, 3);  // 15%: a second round, which finds none
    const kv::ExpireCycle two_rounds = more.expire_some(kStart, 1000);
    EXPECT_EQ(two_rounds.rounds, 2u);
    EXPECT_EQ(two_rounds.sampled, 40u);
    EXPECT_EQ(two_rounds.expired, 3u);
    EXPECT_EQ(more.size(), 97u);
}

TEST(L13_Keyspace, TheActiveCycleNeverSamplesMoreThanItsBudget) {
    kv::Keyspace keyspace;
    add_expiring_keys(keyspace, 1000, 1000);
    const kv::ExpireCycle cycle = keyspace.expire_some(kStart, 50);
    EXPECT_EQ(cycle.sampled, 50u);
    EXPECT_EQ(cycle.expired, 50u);
    EXPECT_EQ(cycle.rounds, 3u);  // 20, 20, 10
    EXPECT_EQ(keyspace.size(), 950u);
    const kv::ExpireCycle rest = keyspace.expire_some(kStart, 10'000);
    EXPECT_EQ(rest.expired, 950u);
    EXPECT_EQ(keyspace.size(), 0u);
    EXPECT_EQ(keyspace.expire_some(kStart, 10'000).sampled, 0u);
}

// Each call goes on where the last stopped: a key nobody looks up is reached in turn.
TEST(L13_Keyspace, SuccessiveCyclesReachEveryKeyInTurn) {
    kv::Keyspace keyspace;
    add_expiring_keys(keyspace, 100, 0);
    keyspace.set_expiry("key99", kStart - Milliseconds(1));
    for (int call = 0; call < 4; ++call) EXPECT_EQ(keyspace.expire_some(kStart, 20).expired, 0u) << call;
    EXPECT_EQ(keyspace.expire_some(kStart, 20).expired, 1u);
    EXPECT_EQ(keyspace.size(), 99u);
}

TEST(L13_Keyspace, ClearForgetsTheKeysWithAnExpiryToo) {
    kv::Keyspace keyspace;
    add_expiring_keys(keyspace, 10, 5);
    keyspace.clear();
    EXPECT_EQ(keyspace.size_with_expiry(), 0u);
    EXPECT_EQ(keyspace.expire_some(kStart, 100).sampled, 0u);
}

// ---- Glob patterns, by stringmatchlen's rules ----------------------------------------------

TEST(L13_Glob, StarsAndQuestionMarks) {
    EXPECT_TRUE(kv::glob_match("h*llo", "hllo"));
    EXPECT_TRUE(kv::glob_match("h*llo", "heeeello"));
    EXPECT_TRUE(kv::glob_match("h?llo", "hello"));
    EXPECT_FALSE(kv::glob_match("h?llo", "hllo"));
    EXPECT_TRUE(kv::glob_match("a**b***", "ab"));
    EXPECT_TRUE(kv::glob_match("", ""));
    EXPECT_FALSE(kv::glob_match("*", ""));  // Redis's: KEYS * does not ask the matcher
    EXPECT_TRUE(kv::glob_match("*", "\0\r\n"s));
    EXPECT_FALSE(kv::glob_match("abc", "abcd"));
}

TEST(L13_Glob, SetsRangesAndNegation) {
    EXPECT_TRUE(kv::glob_match("h[ae]llo", "hallo"));
    EXPECT_FALSE(kv::glob_match("h[ae]llo", "hillo"));
    EXPECT_TRUE(kv::glob_match("h[^e]llo", "hallo"));
    EXPECT_FALSE(kv::glob_match("h[^e]llo", "hello"));
    EXPECT_TRUE(kv::glob_match("h[a-b]llo", "hbllo"));
    EXPECT_TRUE(kv::glob_match("h[z-a]llo", "hmllo"));  // a range either way round
    EXPECT_FALSE(kv::glob_match("[a-c]", "d"));
    EXPECT_TRUE(kv::glob_match("[a-]", "]"));          // "a-]" is a range up to ']', and the set is never closed
    EXPECT_TRUE(kv::glob_match("x[abc", "xb"));        // never closed: the rest is the set
    EXPECT_FALSE(kv::glob_match("x[", "xa"));
}

TEST(L13_Glob, BackslashEscapesOutsideAndInsideASet) {
    EXPECT_TRUE(kv::glob_match("a\\*b", "a*b"));
    EXPECT_FALSE(kv::glob_match("a\\*b", "axb"));
    EXPECT_TRUE(kv::glob_match("[\\]]", "]"));
    EXPECT_TRUE(kv::glob_match("[\\-]", "-"));
    EXPECT_TRUE(kv::glob_match("a\\", "a\\"));          // a trailing backslash is itself
    EXPECT_TRUE(kv::glob_match("\\?", "?"));
    EXPECT_FALSE(kv::glob_match("\\?", "x"));
}

TEST(L13_Glob, CaseIsIgnoredOnlyWhenAsked) {
    EXPECT_FALSE(kv::glob_match("SAVE", "save"));
    EXPECT_TRUE(kv::glob_match("SA[U-W]E", "save", true));
}

// Redis's skipLongerMatches: a star that found no match is not retried further on, so this
// takes linear time, not the ~n^10 a naive matcher would (the watchdog would end that).
TEST(L13_Glob, ManyStarsAgainstALongTextFailFast) {
    EXPECT_FALSE(kv::glob_match("*a*a*a*a*a*a*a*a*a*a*b", std::string(100'000, 'a')));
}

TEST(L13_Glob, APatternNestedPast1000StarsMatchesNothing) {
    std::string stars_1000;
    for (int i = 0; i < 1000; ++i) stars_1000 += "*a";
    EXPECT_TRUE(kv::glob_match(stars_1000, std::string(1000, 'a')));
    EXPECT_FALSE(kv::glob_match(stars_1000 + "*a", std::string(1001, 'a')));
}

}  // namespace
