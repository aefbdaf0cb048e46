// L13_resp_test.cpp — lesson 13: the RESP2 request parser. Commands come out whole and in order however
// the reads split them (one byte at a time, or 10,000 pipelined requests cut at random); inline
// requests are split with Redis's quoting rules; every bound (bulk length, argument count, line
// length, bytes held) holds at its limit and fails one past it with Redis's reply; hostile lengths
// fail before anything is allocated for them, and a failed parser takes nothing more.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "../lessons/13-redis/resp.hpp"

namespace {

using resp::Command;
using resp::Limits;
using resp::RequestParser;
using namespace std::string_literals;

// A command as a client library sends it: a multibulk request.
std::string multibulk(const Command& command) {
    std::string request = "*" + std::to_string(command.size()) + "\r\n";
    for (const std::string& argument : command)
        request += "$" + std::to_string(argument.size()) + "\r\n" + argument + "\r\n";
    return request;
}

// Feeds `stream` in the pieces `sizes` gives (cycled) and returns every command that came out.
std::vector<Command> parse(RequestParser& parser, std::string_view stream, const std::vector<std::size_t>& sizes) {
    std::vector<Command> commands;
    for (std::size_t at = 0, i = 0; at < stream.size(); at += sizes[i++ % sizes.size()]) {
        parser.feed(stream.substr(at, sizes[i % sizes.size()]));
        while (auto command = parser.next()) commands.push_back(std::move(*command));
    }
    return commands;
}

std::vector<Command> parse_whole(std::string_view stream, Limits limits = {}) {
    RequestParser parser(limits);
    return parse(parser, stream, {stream.size()});
}

// The reply a parser fed `stream` whole fails with ("" while it has not failed).
std::string error_of(std::string_view stream, Limits limits = {}) {
    RequestParser parser(limits);
    parse(parser, stream, {stream.size()});
    return parser.failed() ? parser.error_reply() : "";
}

std::string protocol_error(const char* message) { return "-ERR Protocol error: "s + message + "\r\n"; }

// ---- Commands out of the bytes ------------------------------------------------------------

TEST(L13_RespParse, MultibulkArgumentsAreBinarySafeCrLfAndNulIncluded) {
    const Command set = {"SET", "k\r\n\0y"s, "", "\r\n*1\r\n$4\r\n"};
    EXPECT_EQ(parse_whole(multibulk(set)), std::vector<Command>{set});
}

TEST(L13_RespParse, PipelinedMultibulkAndInlineRequestsComeOutInOrder) {
    const std::string stream = multibulk({"SET", "a", "1"}) + "GET a\r\n" + multibulk({"DEL", "a"}) + "PING\n";
    EXPECT_EQ(parse_whole(stream),
              (std::vector<Command>{{"SET", "a", "1"}, {"GET", "a"}, {"DEL", "a"}, {"PING"}}));
}

TEST(L13_RespParse, ACommandFedOneByteAtATimeComesOutAtItsLastByteAndNotBefore) {
    for (const std::string& stream : {multibulk({"SET", "key", "a\r\nb"}), "SET key \"a\\r\\nb\"\r\n"s}) {
        RequestParser parser;
        for (std::size_t i = 0; i + 1 < stream.size(); ++i) {
            parser.feed(stream.substr(i, 1));
            ASSERT_FALSE(parser.next()) << "out after byte " << i << " of " << stream;
        }
        parser.feed(stream.substr(stream.size() - 1));
        EXPECT_EQ(parser.next(), (Command{"SET", "key", "a\r\nb"}));
        EXPECT_FALSE(parser.next());
        EXPECT_FALSE(parser.failed());
    }
}

TEST(L13_RespParse, RequestsWithNoArgumentsAreSkippedAsRedisSkipsThem) {
    EXPECT_EQ(parse_whole("*0\r\n*-1\r\n*-5\r\n\r\n\n   \t \r\nPING\r\n"), std::vector<Command>{{"PING"}});
}

TEST(L13_RespParse, HeldCountsTheBytesNotParsedAndTheArgumentsOfTheCommandSoFar) {
    RequestParser parser;
    parser.feed("*2\r\n$3\r\nfoo\r\n$5\r\nab");
    EXPECT_EQ(parser.held(), 19u);
    EXPECT_FALSE(parser.next());
    EXPECT_EQ(parser.held(), 2u + 3u + sizeof(std::string));  // "ab", and "foo" parsed
    parser.feed("cde\r\n");
    EXPECT_EQ(parser.next(), (Command{"foo", "abcde"}));
    EXPECT_EQ(parser.held(), 0u);
}

// 10,000 commands of random bytes (multibulk) and random words (inline), parsed whole and then
// fed in random pieces of 1 to 100 bytes: the same commands, in the same order.
TEST(L13_RespParse, APipelineOf10000CommandsFedInRandomPiecesGivesTheCommandsFedWhole) {
    std::mt19937 random(13);
    std::vector<Command> sent;
    std::string stream;
    for (int i = 0; i < 10000; ++i) {
        Command command(1 + random() % 5);
        const bool inline_request = random() % 4 == 0;
        for (std::string& argument : command) {
            argument.resize(inline_request ? 1 + random() % 10 : random() % 40);
            for (char& byte : argument)
                byte = inline_request ? static_cast<char>('a' + random() % 26) : static_cast<char>(random());
        }
        std::string line;
        for (const std::string& word : command) line += word + " ";
        stream += inline_request ? line + "\r\n" : multibulk(command);
        sent.push_back(std::move(command));
    }
    ASSERT_EQ(parse_whole(stream), sent);
    std::vector<std::size_t> pieces(997);
    for (std::size_t& piece : pieces) piece = 1 + random() % 100;
    RequestParser parser;
    EXPECT_EQ(parse(parser, stream, pieces), sent);
    EXPECT_FALSE(parser.failed());
    EXPECT_EQ(parser.held(), 0u);
}

// Fed one byte at a time, a 4 MiB argument and a 4 MiB inline line (its bound raised) are each
// parsed once: a parser that copied what it holds at every byte, or searched a line for its end
// from its start at every byte, would take hours here, and the watchdog would end it.
TEST(L13_RespParse, A4MibArgumentAndA4MibLineFedOneByteAtATimeAreParsedInLinearTime) {
    const std::string value(4 << 20, 'v');
    const std::string word(4 << 20, 'w');
    const std::string stream = multibulk({"SET", "k", value}) + "ECHO " + word + "\r\n";
    RequestParser parser({.max_line_length = 8 << 20});
    const std::vector<Command> commands = parse(parser, stream, {1});
    EXPECT_EQ(commands, (std::vector<Command>{{"SET", "k", value}, {"ECHO", word}}));
}

// ---- Inline requests, split as sdssplitargs splits them ----------------------------------

TEST(L13_RespInline, WordsAreSplitOnSpacesAndTabsAndALoneLfEndsTheLine) {
    EXPECT_EQ(parse_whole("  SET\tk   v \nGET k\r\n"), (std::vector<Command>{{"SET", "k", "v"}, {"GET", "k"}}));
}

TEST(L13_RespInline, DoubleQuotesKeepSpacesAndTakeEscapesAndHexBytes) {
    EXPECT_EQ(resp::split_inline(R"(SET "a b" "\r\n\t\b\a\"\\\q" "\x41\x4a\x00\xZZ" "")"),
              (Command{"SET", "a b", "\r\n\t\b\a\"\\q", "AJ\0xZZ"s, ""}));
}

TEST(L13_RespInline, SingleQuotesTakeOnlyAnEscapedQuote) {
    EXPECT_EQ(resp::split_inline(R"(SET 'it\'s a \n' '\x41')"), (Command{"SET", "it's a \\n", "\\x41"}));
}

TEST(L13_RespInline, QuotedAndUnquotedPartsMakeOneWord) {
    EXPECT_EQ(resp::split_inline(R"(a"b c" x'y')"), (Command{"ab c", "xy"}));
}

TEST(L13_RespInline, AnOpenQuoteOrAClosingQuoteFollowedByALetterFailsWithRedisReply) {
    for (const char* line : {"SET \"abc\r\n", "SET 'abc\r\n", "SET \"a\"b\r\n", "SET 'a'b\r\n", "SET \"a\\\"\r\n"})
        EXPECT_EQ(error_of(line), protocol_error("unbalanced quotes in request")) << line;
}

// ---- The bounds: at the limit, and one past it ---------------------------------------------

TEST(L13_RespLimits, TheDefaultsAreRedis) {
    const Limits redis;
    EXPECT_EQ(redis.max_bulk_length, 512u * 1024 * 1024);  // proto-max-bulk-len
    EXPECT_EQ(redis.max_arguments, 1024u * 1024);
    EXPECT_EQ(redis.max_line_length, 64u * 1024);          // PROTO_INLINE_MAX_SIZE
    EXPECT_EQ(redis.max_held, 1024u * 1024 * 1024);        // client-query-buffer-limit
}

TEST(L13_RespLimits, ABulkLengthPastTheLimitFails) {
    EXPECT_EQ(error_of("*1\r\n$536870912\r\n"), "");
    EXPECT_EQ(error_of("*1\r\n$536870913\r\n"), protocol_error("invalid bulk length"));
    EXPECT_EQ(error_of("*1\r\n$10\r\n", {.max_bulk_length = 10}), "");
    EXPECT_EQ(error_of("*1\r\n$11\r\n", {.max_bulk_length = 10}), protocol_error("invalid bulk length"));
}

TEST(L13_RespLimits, AnArgumentCountPastTheLimitFails) {
    EXPECT_EQ(error_of("*1048576\r\n"), "");
    EXPECT_EQ(error_of("*1048577\r\n"), protocol_error("invalid multibulk length"));
    EXPECT_EQ(error_of("*3\r\n", {.max_arguments = 3}), "");
    EXPECT_EQ(error_of("*4\r\n", {.max_arguments = 3}), protocol_error("invalid multibulk length"));
}

// A line is measured up to its \n, its \r included, and fails whether or not its \n has come.
TEST(L13_RespLimits, AnInlineLinePastTheLimitFailsWithOrWithoutItsEnd) {
    const std::string at_limit = "ECHO " + std::string(64 * 1024 - 6, 'x') + "\r";
    ASSERT_EQ(at_limit.size(), 64u * 1024);
    EXPECT_EQ(parse_whole(at_limit + "\n").size(), 1u);
    EXPECT_EQ(error_of(at_limit), "");
    EXPECT_EQ(error_of("x" + at_limit + "\n"), protocol_error("too big inline request"));
    EXPECT_EQ(error_of("x" + at_limit), protocol_error("too big inline request"));
    EXPECT_EQ(error_of("PING 123\n", {.max_line_length = 8}), "");
    EXPECT_EQ(error_of("PING 1234", {.max_line_length = 8}), protocol_error("too big inline request"));
}

TEST(L13_RespLimits, ALengthLinePastTheLineLimitFails) {
    const std::string digits(64 * 1024, '1');
    EXPECT_EQ(error_of("*" + digits), protocol_error("too big mbulk count string"));
    EXPECT_EQ(error_of("*1\r\n$" + digits), protocol_error("too big bulk count string"));
}

// Past max_held the parser fails with no reply: Redis closes such a client without one.
TEST(L13_RespLimits, HoldingMoreThanTheLimitFailsWithNoReply) {
    RequestParser parser({.max_held = 100});
    parser.feed("*1\r\n$200\r\n");
    EXPECT_FALSE(parser.next());
    parser.feed(std::string(100, 'v'));
    EXPECT_EQ(parser.held(), 100u);
    EXPECT_FALSE(parser.failed());
    parser.feed("v");
    EXPECT_TRUE(parser.failed());
    EXPECT_EQ(parser.error_reply(), "");
    EXPECT_EQ(parser.held(), 0u);
}

// An empty argument is 6 bytes fed and a std::string held: arguments that were fed cheaply still
// count for what they cost to hold.
TEST(L13_RespLimits, ArgumentsParsedCountTowardsTheBytesHeld) {
    RequestParser parser({.max_held = 1000});
    std::string empties = "*1000\r\n";
    for (int i = 0; i < 40; ++i) empties += "$0\r\n\r\n";
    parser.feed(empties);
    EXPECT_FALSE(parser.next());
    EXPECT_EQ(parser.held(), 40 * sizeof(std::string));
    parser.feed("$");
    EXPECT_TRUE(parser.failed());
}

// ---- Hostile clients ------------------------------------------------------------------------

TEST(L13_RespHostile, BulkLengthsOf2To63AndMinus5AndAbcAndOtherNonNumbersFail) {
    for (const char* length : {"9223372036854775808", "-5", "abc", "", "-", "-0", "007", "+5", "5 ", "99999999999999999999999"})
        EXPECT_EQ(error_of("*1\r\n$"s + length + "\r\n"), protocol_error("invalid bulk length")) << length;
}

TEST(L13_RespHostile, ABillionArgumentsOrAnArgumentCountThatIsNoNumberFail) {
    for (const char* count : {"1000000000", "9223372036854775808", "abc", "", "01", "1\r\r"})
        EXPECT_EQ(error_of("*"s + count + "\r\n"), protocol_error("invalid multibulk length")) << count;
}

TEST(L13_RespHostile, AnArgumentNotAnnouncedByADollarFailsNamingTheByte) {
    EXPECT_EQ(error_of("*1\r\n:3\r\n"), protocol_error("expected '$', got ':'"));
    EXPECT_EQ(error_of("*1\r\n\r\n"), protocol_error("expected '$', got ' '"));
}

// Redis skips the two bytes after an argument unread; here they must be \r\n, and a wrong one
// fails as soon as it comes, without waiting for the next.
TEST(L13_RespHostile, AnArgumentNotFollowedByCrLfFails) {
    EXPECT_EQ(error_of("*1\r\n$3\r\nfoo\n"), protocol_error("expected CRLF after bulk data"));
    EXPECT_EQ(error_of("*1\r\n$3\r\nfoo\rX"), protocol_error("expected CRLF after bulk data"));
    EXPECT_EQ(error_of("*1\r\n$3\r\nfoobar\r\n"), protocol_error("expected CRLF after bulk data"));
}

// A megabyte with no \n, in 4 KiB reads: the parser fails once the line passes 64 KiB, then
// holds nothing and takes no more.
TEST(L13_RespHostile, AMegabyteOfGarbageFailsAt64KibAndIsNotKept) {
    std::mt19937 random(13);
    std::string garbage(1 << 20, ' ');
    for (char& byte : garbage) byte = static_cast<char>('!' + random() % 90);
    garbage[0] = 'G';  // not '*': an inline request
    RequestParser parser;
    std::size_t fed = 0;
    for (; fed < garbage.size() && !parser.failed(); fed += 4096) {
        parser.feed(std::string_view(garbage).substr(fed, 4096));
        EXPECT_FALSE(parser.next());
    }
    EXPECT_EQ(fed, 17u * 4096);
    EXPECT_EQ(parser.error_reply(), protocol_error("too big inline request"));
    parser.feed(std::string_view(garbage).substr(fed));
    EXPECT_EQ(parser.held(), 0u);
}

// With every bound lifted, a client announces 10^12 arguments and a bulk of 2^62 bytes and
// sends three: the parser holds three bytes. One that reserved what is announced would throw
// (std::length_error or std::bad_alloc) here.
TEST(L13_RespHostile, NothingIsAllocatedForWhatAClientOnlyAnnounces) {
    constexpr std::size_t kNoBound = std::numeric_limits<std::size_t>::max();
    RequestParser parser({.max_bulk_length = kNoBound, .max_arguments = kNoBound, .max_held = kNoBound});
    parser.feed("*1000000000000\r\n$4611686018427387904\r\nabc");
    EXPECT_FALSE(parser.next());
    EXPECT_FALSE(parser.failed());
    EXPECT_EQ(parser.held(), 3u);
}

// The commands before the bad request come out (Redis runs them, then replies with the error);
// after it, nothing does, whatever is fed.
TEST(L13_RespHostile, CommandsBeforeAnErrorComeOutAndAfterItTheParserTakesNothing) {
    RequestParser parser;
    parser.feed("PING\r\n" + multibulk({"ECHO", "x"}) + "*1\r\n$-5\r\nPING\r\n");
    EXPECT_EQ(parser.next(), Command{"PING"});
    EXPECT_EQ(parser.next(), (Command{"ECHO", "x"}));
    EXPECT_FALSE(parser.next());
    EXPECT_TRUE(parser.failed());
    EXPECT_EQ(parser.error_reply(), protocol_error("invalid bulk length"));
    parser.feed("PING\r\n");
    EXPECT_FALSE(parser.next());
    EXPECT_EQ(parser.held(), 0u);
}

}  // namespace
