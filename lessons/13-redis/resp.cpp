// resp.cpp — lesson 13: RESP2 requests parsed incrementally, every bound checked before it is paid for.
//
// The error texts and the limits are Redis's (src/networking.c:
// processMultibulkBuffer, processInlineBuffer, readQueryFromClient; the
// quoting of inline words is sdssplitargs in src/sds.c, the numbers
// string2ll in src/util.c, the defaults src/server.h and src/config.c).
#include "resp.hpp"

#include <algorithm>
#include <charconv>
#include <cstring>
#include <utility>

namespace resp {
namespace {

// A buffer that held a big argument is given back once everything in it is
// parsed; one this size or smaller is kept for the next reads.
constexpr std::size_t kKeptCapacity = 64 * 1024;

// The number of a length line ("*3\r" after the '*', "$5\r" after the '$'):
// an integer_of() followed by its \r.
std::optional<long long> number_of(std::string_view line) {
    if (!line.ends_with('\r')) return {};
    line.remove_suffix(1);
    return integer_of(line);
}

bool is_space(char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }  // isspace(), C locale

int hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

char unescaped(char c) {
    switch (c) {
    case 'n': return '\n';
    case 'r': return '\r';
    case 't': return '\t';
    case 'b': return '\b';
    case 'a': return '\a';
    default: return c;  // \" \\ \' and any other: the byte itself
    }
}

// Reads the word that starts at line[at] into `word` and leaves `at` past it.
// A word may be made of quoted and unquoted parts (a"b c" is "ab c"); unquoted,
// it ends at a space, a tab, \r or \n. Inside "..." the escapes of
// unescaped() and \xHH apply; inside '...' only \'. False when a quote is left
// open, or when a closing quote is followed by anything but a space.
bool read_word(std::string_view line, std::size_t& at, std::string& word) {
    char quote = 0;  // '"' or '\'' inside a quoted part
    for (; at < line.size(); ++at) {
        const char c = line[at];
        const std::string_view rest = line.substr(at + 1);
        if (quote == 0) {
            if (c == ' ' || c == '\t' || c == '\r' || c == '\n') return true;
            if (c == '"' || c == '\'')
                quote = c;
            else
                word += c;
        } else if (c == quote) {
            ++at;
            return rest.empty() || is_space(rest[0]);
        } else if (c == '\\' && quote == '"' && rest.size() >= 3 && rest[0] == 'x' &&
                   hex_value(rest[1]) >= 0 && hex_value(rest[2]) >= 0) {
            word += static_cast<char>(hex_value(rest[1]) * 16 + hex_value(rest[2]));
            at += 3;
        } else if (c == '\\' && !rest.empty() && (quote == '"' || rest[0] == '\'')) {
            word += unescaped(rest[0]);
            ++at;
        } else {
            word += c;
        }
    }
    return quote == 0;
}

}  // namespace

std::optional<long long> integer_of(std::string_view text) {
    const std::string_view digits = text.starts_with('-') ? text.substr(1) : text;
    if (digits.empty() || (digits[0] == '0' && text != "0")) return {};
    long long number = 0;
    const char* end = text.data() + text.size();
    const auto [stop, error] = std::from_chars(text.data(), end, number);
    if (error != std::errc() || stop != end) return {};
    return number;
}

std::optional<Command> split_inline(std::string_view line) {
    Command words;
    for (std::size_t at = 0;;) {
        while (at < line.size() && is_space(line[at])) ++at;
        if (at == line.size()) return words;
        if (!read_word(line, at, words.emplace_back())) return {};
    }
}

// The bytes parsed are dropped only once they are at least half of the
// buffer, so the bytes kept are moved no more often than bytes are dropped:
// O(bytes) over the connection's life, however the reads split it.
void RequestParser::feed(std::string_view bytes) {
    if (failed_) return;
    if (parsed_ >= input_.size() / 2) {
        input_.erase(0, parsed_);
        scanned_ = std::max(scanned_, parsed_) - parsed_;
        parsed_ = 0;
        if (input_.empty() && input_.capacity() > kKeptCapacity) input_.shrink_to_fit();
    }
    input_.append(bytes);
    if (held() > limits_.max_held) fail("");  // Redis logs it, closes, replies nothing
}

std::size_t RequestParser::held() const {
    return unparsed() + command_bytes_ + command_.size() * sizeof(std::string);
}

// Each step reads one piece of a request if all of it is there: a multibulk
// request's count, one of its arguments, or a whole inline request. A
// request with no arguments is skipped; so the loop goes on to the next.
std::optional<Command> RequestParser::next() {
    while (!failed_) {
        bool read = false;
        if (arguments_left_ > 0)
            read = read_argument();
        else if (unparsed() == 0)
            return {};
        else if (input_[parsed_] == '*')
            read = read_count();
        else
            read = read_inline();
        if (!read) return {};
        if (arguments_left_ == 0 && !command_.empty()) {
            command_bytes_ = 0;
            return std::exchange(command_, {});
        }
    }
    return {};
}

// The next line, up to its \n (not included), once it has all come. Each
// byte is searched once: a search that finds no \n goes on, at the next
// call, from where it stopped. A line longer than max_line_length fails
// whether or not its end has come, so that how the reads split it does not
// matter (Redis checks only a line whose end has not come).
std::optional<std::string_view> RequestParser::take_line(const char* too_long) {
    const std::size_t from = std::max(scanned_, parsed_);
    const void* newline = std::memchr(input_.data() + from, '\n', input_.size() - from);
    const std::size_t end = newline ? static_cast<const char*>(newline) - input_.data() : input_.size();
    if (end - parsed_ > limits_.max_line_length) {
        fail(too_long);
        return {};
    }
    if (newline == nullptr) {
        scanned_ = end;
        return {};
    }
    const std::string_view line(input_.data() + parsed_, end - parsed_);
    parsed_ = end + 1;
    return line;
}

// *N\r\n. N <= 0 is a request with no arguments. Room is made for at most
// 1024 of the N arguments announced, as Redis makes it: a count is only a
// claim; the arguments are counted as they come.
bool RequestParser::read_count() {
    const auto line = take_line("too big mbulk count string");
    if (!line) return false;
    const auto count = number_of(line->substr(1));
    if (!count || (*count > 0 && static_cast<std::size_t>(*count) > limits_.max_arguments))
        return fail("invalid multibulk length");
    arguments_left_ = *count > 0 ? static_cast<std::size_t>(*count) : 0;
    command_.reserve(std::min<std::size_t>(arguments_left_, 1024));
    return true;
}

// $LEN\r\n, then LEN bytes and \r\n. The length is checked before any of the
// bytes it announces has come, and nothing is reserved for them. Redis skips
// the two bytes after the argument unread; here a byte there that is not the
// \r\n expected fails the request at once.
bool RequestParser::read_argument() {
    if (!bulk_length_) {
        const auto line = take_line("too big bulk count string");
        if (!line) return false;
        if (!line->starts_with('$')) {
            const char got = line->empty() || line->front() == '\r' ? ' ' : line->front();
            return fail(std::string("expected '$', got '") + got + "'");  // \r \n shown as a space
        }
        const auto length = number_of(line->substr(1));
        if (!length || *length < 0 || static_cast<unsigned long long>(*length) > limits_.max_bulk_length)
            return fail("invalid bulk length");
        bulk_length_ = static_cast<std::size_t>(*length);
    }
    const std::size_t length = *bulk_length_;
    for (std::size_t i = length; i < length + 2 && i < unparsed(); ++i)
        if (input_[parsed_ + i] != "\r\n"[i - length]) return fail("expected CRLF after bulk data");
    if (unparsed() < length + 2) return false;
    command_.emplace_back(input_, parsed_, length);
    command_bytes_ += length;
    parsed_ += length + 2;
    bulk_length_.reset();
    --arguments_left_;
    return true;
}

// A line of words. Its \r, if any, is the line's end, not a byte of it.
bool RequestParser::read_inline() {
    auto line = take_line("too big inline request");
    if (!line) return false;
    if (line->ends_with('\r')) line->remove_suffix(1);
    auto words = split_inline(*line);
    if (!words) return fail("unbalanced quotes in request");
    command_ = std::move(*words);
    return true;
}

// Everything held is let go: the connection is about to close.
bool RequestParser::fail(std::string_view message) {
    failed_ = true;
    if (!message.empty()) error_reply_ = "-ERR Protocol error: " + std::string(message) + "\r\n";
    input_ = std::string();
    command_ = Command();
    parsed_ = scanned_ = command_bytes_ = arguments_left_ = 0;
    return false;
}

}  // namespace resp
