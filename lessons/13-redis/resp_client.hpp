// resp_client.hpp — lesson 13: a client of RESP2 on a fiber, for the demo: send requests, read whole replies.
//
//   RespClient client(port);                          // connects, from a fiber
//   client.send(RespClient::request({"SET", "k", "v"}));
//   std::string reply = client.reply();               // "+OK", one whole reply, shown as text
//
// A reply is read whole however the reads split it: its type's first byte,
// then its line, then for a bulk its bytes, for an array that many replies.
// Each is shown on one line the way redis-cli shows it: OK, (integer) 3,
// "text", (nil), (error) ERR ..., and an array as [a, b].
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>

#include "fib/unique_fd.hpp"

class RespClient {
public:
    // Connects to 127.0.0.1:port; throws std::system_error if it cannot.
    explicit RespClient(std::uint16_t port);

    // A request as a client library writes one: an array of bulks.
    static std::string request(std::initializer_list<std::string_view> arguments);

    // Sends all of `bytes` (any number of requests, or garbage); false on an error.
    bool send(std::string_view bytes);
    // The next whole reply, as text; "(closed)" once the server has closed.
    std::string reply();

    int socket() const { return socket_.get(); }

private:
    bool fill();  // one more read into input_; false at the end
    std::string line();
    std::string next_reply(bool& closed);

    fib::UniqueFd socket_;
    std::string input_;
    std::size_t at_ = 0;
};
