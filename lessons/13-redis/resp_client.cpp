// resp_client.cpp — lesson 13: the demo's client: requests written as arrays of bulks, replies read whole.
#include "resp_client.hpp"

#include <algorithm>
#include <cerrno>
#include <string>
#include <system_error>
#include <utility>

#include "fib/io.hpp"
#include "fib/tcp.hpp"
#include "reply.hpp"

RespClient::RespClient(std::uint16_t port) : socket_(fib::tcp::connect("127.0.0.1", port)) {
    if (!socket_) throw std::system_error(errno, std::generic_category(), "connect");
}

std::string RespClient::request(std::initializer_list<std::string_view> arguments) {
    std::string bytes;
    resp::Reply writer(bytes);
    writer.array(arguments.size());
    for (const std::string_view argument : arguments) writer.bulk(argument);
    return bytes;
}

bool RespClient::send(std::string_view bytes) {
    return fib::io::send_all(socket_.get(), bytes.data(), bytes.size()) >= 0;
}

bool RespClient::fill() {
    const std::size_t had = input_.size();
    input_.resize(had + 64 * 1024);
    const ssize_t n = fib::io::read(socket_.get(), input_.data() + had, 64 * 1024);
    input_.resize(had + static_cast<std::size_t>(std::max<ssize_t>(n, 0)));
    return n > 0;
}

// A line without its \r\n; empty if the connection ends first.
std::string RespClient::line() {
    std::size_t end;
    while ((end = input_.find("\r\n", at_)) == std::string::npos)
        if (!fill()) return {};
    std::string text = input_.substr(at_, end - at_);
    at_ = end + 2;
    return text;
}

namespace {

// A bulk's bytes as redis-cli shows them: quoted, with CR, LF, tab, quote and
// backslash escaped, and any other byte outside printable ASCII as \xHH.
std::string quoted(std::string_view bytes) {
    std::string text = "\"";
    for (const char c : bytes) {
        const auto byte = static_cast<unsigned char>(c);
        if (c == '\r') text += "\\r";
        else if (c == '\n') text += "\\n";
        else if (c == '\t') text += "\\t";
        else if (c == '"' || c == '\\') text += std::string("\\") + c;
        else if (byte < 0x20 || byte > 0x7e) text += "\\x" + std::string(1, "0123456789abcdef"[byte >> 4]) + "0123456789abcdef"[byte & 15];
        else text += c;
    }
    return text + "\"";
}

}  // namespace

std::string RespClient::next_reply(bool& closed) {
    const std::string head = line();
    if (head.empty()) {
        closed = true;
        return "(closed)";
    }
    const std::string rest = head.substr(1);
    switch (head[0]) {
    case '+': return rest;
    case '-': return "(error) " + rest;
    case ':': return "(integer) " + rest;
    case '$': {
        if (rest == "-1") return "(nil)";
        const std::size_t length = std::stoul(rest);
        while (input_.size() - at_ < length + 2)
            if (!fill()) return closed = true, "(closed)";
        std::string bytes = quoted(std::string_view(input_).substr(at_, length));
        at_ += length + 2;
        return bytes;
    }
    case '*': {
        if (rest == "-1") return "(nil array)";
        std::string items = "[";
        for (long count = std::stol(rest), i = 0; i < count && !closed; ++i)
            items += (i ? ", " : "") + next_reply(closed);
        return items + "]";
    }
    default: return "(not RESP) " + head;
    }
}

std::string RespClient::reply() {
    bool closed = false;
    std::string text = next_reply(closed);
    if (at_ > 64 * 1024) input_.erase(0, std::exchange(at_, 0));
    return text;
}
