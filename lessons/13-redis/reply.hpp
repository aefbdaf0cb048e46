// reply.hpp — lesson 13: the replies of RESP2, Redis's protocol, appended to a client's output bytes.
//
//   std::string out;                      // what the connection will send
//   resp::Reply reply(out);
//   reply.array(2);                       // *2\r\n        an array of the next two replies
//   reply.bulk("a\r\nb");                 // $4\r\na\r\nb\r\n  any bytes, with their length
//   reply.null_bulk();                    // $-1\r\n       GET of a missing key
//
// Five types, each told by its first byte: a simple string (+OK), an error
// (-ERR ...), an integer (:42), a bulk string ($len then the bytes: binary
// safe) and an array (*count then that many replies, nested as deep as
// wanted). A bulk and an array each have a null form ($-1, *-1) that RESP2
// uses for "nothing" where RESP3 has a type of its own.
//
// A simple string and an error are one line: a \r or \n inside them would end
// it early, so both become spaces, as Redis's addReplyErrorLength makes them.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace resp {

class Reply {
public:
    // Appends to `out`, which must outlive the Reply.
    explicit Reply(std::string& out) : out_(out) {}

    void simple(std::string_view text);  // +text
    // `message` starts with its code, as Redis's do: "ERR syntax error", "WRONGTYPE ...".
    void error(std::string_view message);
    void integer(long long number);
    void bulk(std::string_view bytes);
    void null_bulk();
    // The header of an array of `count` replies; the caller appends them next.
    void array(std::size_t count);
    void null_array();

    void ok() { simple("OK"); }

private:
    void text_line(char type, std::string_view text);
    void number_line(char type, long long number);

    std::string& out_;
};

}  // namespace resp
