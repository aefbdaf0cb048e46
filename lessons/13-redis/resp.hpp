// resp.hpp — lesson 13: the request parser of RESP2, Redis's protocol, fed bytes as they arrive.
//
//   resp::RequestParser parser;                 // one per client
//   parser.feed({buffer, bytes_read});          // after every read
//   while (auto command = parser.next())        // every complete command, in order
//       execute(*command);                      // (*command)[0] is the command's name
//   if (parser.failed()) {                      // a protocol error, or too much held:
//       send(parser.error_reply());             // "-ERR Protocol error: ...\r\n", or ""
//       close the connection;                   // as Redis does
//   }
//
// A client sends requests in one of two forms, told apart by their first byte:
//
//   multibulk  *3\r\n$3\r\nSET\r\n$1\r\nk\r\n$5\r\nv\r\nx\r\n    each argument with its length:
//              binary safe, what every client library sends
//   inline     SET k "v\r\nx"\r\n                             a line of words, what telnet sends
//
// A read may end anywhere, inside a length or an argument, and may hold many
// requests (pipelining). So the parser keeps what it was fed and hands out a
// command only once all of it is there; what it already parsed of a longer
// one (the arguments that have come) it keeps, and never parses again. Each
// byte is parsed once: fed one byte at a time, a command costs what it costs
// fed whole.
//
// Everything a client can make the parser hold is bounded (Limits, with
// Redis's defaults): an argument's length, the count of arguments, an inline
// line, and all the bytes held at once. A length is checked when its line is
// read, before a byte of what it announces has come, and nothing is ever
// allocated for what a client merely claims: a client that announces a bulk
// of 512 MB costs what it has sent so far. Past a bound, or at a malformed
// request, the parser fails and takes nothing more. The commands before the
// bad one still come out of next(), as Redis runs them before it replies
// with the error.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace resp {

// A command's arguments, each any bytes (\r\n and NUL included).
using Command = std::vector<std::string>;

struct Limits {
    // An argument's length (proto-max-bulk-len; "invalid bulk length" above).
    std::size_t max_bulk_length = 512 * 1024 * 1024;
    // A multibulk request's argument count ("invalid multibulk length" above).
    // Redis 6's fixed bound; Redis 7 raised it to INT_MAX and leaves the
    // memory to the query buffer's bound, which holds here too.
    std::size_t max_arguments = 1024 * 1024;
    // An inline request's line, and a multibulk request's length lines, before
    // their \n (PROTO_INLINE_MAX_SIZE; "too big inline request" above).
    std::size_t max_line_length = 64 * 1024;
    // What held() may reach (client-query-buffer-limit). Past it the parser
    // fails with no error reply: Redis closes such a client without one.
    std::size_t max_held = 1024 * 1024 * 1024;
};

class RequestParser {
public:
    explicit RequestParser(Limits limits = {}) : limits_(limits) {}

    // Takes the bytes a read returned. Ignores them once failed().
    void feed(std::string_view bytes);

    // The next complete command, or nothing until more bytes are fed (or ever,
    // once failed()). Requests with no arguments (an empty line, *0) are
    // skipped, as Redis skips them.
    std::optional<Command> next();

    bool failed() const { return failed_; }
    // Once failed(): the reply Redis sends before it closes the connection
    // ("-ERR Protocol error: invalid bulk length\r\n"), or "" when it sends none.
    const std::string& error_reply() const { return error_reply_; }

    // The bytes held: those fed and not yet parsed, plus the arguments of the
    // command being assembled, each with its std::string. Checked against
    // Limits::max_held after every feed: parsing a feed's bytes can raise it
    // by a few times their number at most (an empty argument, "$0\r\n\r\n",
    // is 6 bytes fed and 32 held), which the next feed's check then sees.
    std::size_t held() const;

private:
    bool read_count();
    bool read_argument();
    bool read_inline();
    std::optional<std::string_view> take_line(const char* too_long);
    bool fail(std::string_view message);
    std::size_t unparsed() const { return input_.size() - parsed_; }

    Limits limits_;
    std::string input_;            // what was fed; bytes before parsed_ are done with
    std::size_t parsed_ = 0;
    std::size_t scanned_ = 0;      // a line's \n is searched for from here on
    Command command_;              // the arguments of a multibulk request so far
    std::size_t command_bytes_ = 0;
    std::size_t arguments_left_ = 0;
    std::optional<std::size_t> bulk_length_;  // of the argument being read, once its line is
    bool failed_ = false;
    std::string error_reply_;
};

// Splits an inline request's line into arguments the way Redis does
// (sdssplitargs): words apart by spaces, "double quotes" with \n \r \t \b \a
// \xHH and \<any> escapes, 'single quotes' with only \' escaped. Nothing when a
// quote is left open or a closing quote is followed by something other than a space.
std::optional<Command> split_inline(std::string_view line);

// A number as Redis reads one (string2ll in src/util.c): "0", or digits with
// no leading zero after an optional '-', fitting a long long; nothing else, no
// space, no '+'. Lengths in requests and integer arguments are read this way.
std::optional<long long> integer_of(std::string_view text);

}  // namespace resp
