// main.cpp — lesson 13 demo: a pipelined buffer of RESP2 requests, fed in pieces, parsed into commands.
//
// Three requests as a client might pipeline them: two multibulk ones (one
// with a value holding \r\n) and an inline one, as telnet sends it. They
// are fed seven bytes at a time, as if each read returned that much; every
// command comes out whole, in order. Then a request with a hostile length,
// and the error reply Redis would send before it closes the connection.
#include <cstdio>
#include <string>
#include <string_view>

#include "resp.hpp"

namespace {

// An argument as C would write it: \r and \n escaped, the rest as is.
std::string shown(std::string_view argument) {
    std::string text = "\"";
    for (const char c : argument) {
        if (c == '\r') text += "\\r";
        else if (c == '\n') text += "\\n";
        else text += c;
    }
    return text + "\"";
}

void feed_in_pieces(resp::RequestParser& parser, std::string_view stream, std::size_t piece) {
    for (std::size_t at = 0; at < stream.size(); at += piece) {
        parser.feed(stream.substr(at, piece));
        while (auto command = parser.next()) {
            std::printf("  command:");
            for (const std::string& argument : *command) std::printf(" %s", shown(argument).c_str());
            std::printf("\n");
        }
    }
}

}  // namespace

int main() {
    const std::string_view pipeline =
        "*3\r\n$3\r\nSET\r\n$3\r\nkey\r\n$10\r\ntwo\r\nlines\r\n"
        "*2\r\n$3\r\nGET\r\n$3\r\nkey\r\n"
        "SET greeting \"hello world\"\r\n";
    std::printf("A pipeline of %zu bytes, fed 7 bytes at a time:\n", pipeline.size());
    resp::RequestParser parser;
    feed_in_pieces(parser, pipeline, 7);

    std::printf("A bulk length of 2^63:\n");
    resp::RequestParser hostile;
    feed_in_pieces(hostile, "*1\r\n$9223372036854775808\r\n", 7);
    std::printf("  failed: %s, reply: %s\n", hostile.failed() ? "yes" : "no", shown(hostile.error_reply()).c_str());
    return 0;
}
