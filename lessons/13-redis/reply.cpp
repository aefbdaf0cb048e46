// reply.cpp — lesson 13: RESP2 replies written as Redis writes them (src/networking.c: addReply*).
#include "reply.hpp"

#include <charconv>

namespace resp {

// One line of a type byte, text with no \r or \n left in it, and \r\n.
void Reply::text_line(char type, std::string_view text) {
    out_ += type;
    const std::size_t start = out_.size();
    out_ += text;
    for (std::size_t i = start; i < out_.size(); ++i)
        if (out_[i] == '\r' || out_[i] == '\n') out_[i] = ' ';
    out_ += "\r\n";
}

// A type byte, a number in decimal, and \r\n: an integer, or the length of a bulk or an array.
void Reply::number_line(char type, long long number) {
    char digits[24];
    const char* end = std::to_chars(digits, digits + sizeof digits, number).ptr;
    out_ += type;
    out_.append(digits, static_cast<std::size_t>(end - digits));
    out_ += "\r\n";
}

void Reply::simple(std::string_view text) { text_line('+', text); }

void Reply::error(std::string_view message) { text_line('-', message); }

void Reply::integer(long long number) { number_line(':', number); }

void Reply::bulk(std::string_view bytes) {
    number_line('$', static_cast<long long>(bytes.size()));
    out_ += bytes;
    out_ += "\r\n";
}

void Reply::null_bulk() { out_ += "$-1\r\n"; }

void Reply::array(std::size_t count) { number_line('*', static_cast<long long>(count)); }

void Reply::null_array() { out_ += "*-1\r\n"; }

}  // namespace resp
