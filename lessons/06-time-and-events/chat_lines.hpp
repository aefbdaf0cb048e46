// chat_lines.hpp — lesson 6: LineSplitter, which cuts a chat client's byte stream into lines.
//
//   LineSplitter lines;
//   lines.feed({buffer, received}, [&](std::string_view line) { room.relay(member, line); });
//
// TCP carries bytes, not lines: one read may end in the middle of a line, or
// hold several. The splitter keeps the unfinished line between reads and hands
// on each line as it ends, without its newline. Its rules, which
// tests/L05_chat_test.cpp checks byte for byte:
//
// - A line ends at '\n'. Every other byte ('\r' and '\0' too) is text.
// - An empty line is not handed on: it says nothing.
// - A line longer than kMaxLine bytes is cut into pieces of kMaxLine bytes,
//   each handed on as a line of its own. The cut is made when byte kMaxLine + 1
//   arrives, so a line of exactly kMaxLine bytes stays whole. This bounds what
//   a client that never sends a newline can make the server hold.
// - What follows the last newline when the client leaves is not handed on: a
//   line is said when it ends.
#pragma once

#include <algorithm>
#include <cstddef>
#include <string>
#include <string_view>

class LineSplitter {
public:
    static constexpr std::size_t kMaxLine = 4096;  // bytes of text per line handed on

    // Calls on_line(std::string_view) for each line `bytes` completes.
    template <class OnLine>
    void feed(std::string_view bytes, OnLine&& on_line) {
        while (!bytes.empty()) {
            const std::size_t newline = bytes.find('\n');
            std::string_view text = bytes.substr(0, newline);  // all of it without a newline
            while (!text.empty()) {
                if (pending_.size() == kMaxLine) hand_on(on_line);
                const std::size_t taken = std::min(text.size(), kMaxLine - pending_.size());
                pending_.append(text.substr(0, taken));
                text.remove_prefix(taken);
            }
            if (newline == std::string_view::npos) return;
            if (!pending_.empty()) hand_on(on_line);
            bytes.remove_prefix(newline + 1);
        }
    }

private:
    template <class OnLine>
    void hand_on(OnLine& on_line) {
        on_line(std::string_view(pending_));
        pending_.clear();  // keeps its capacity: no allocation per line
    }

    std::string pending_;  // the unfinished line, at most kMaxLine bytes
};
