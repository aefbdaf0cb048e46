// L02_trace_file.hpp — lesson 2: run a scenario traced in a child process and read the file it writes.
//
// The child sets FIB_TRACE (and FIB_TRACE_EVENTS, when given), runs the
// scenario and exits, which writes the trace; the parent reads the file back
// and looks at it by substrings and by its instant events, in order, and
// checks that it is whole JSON (JsonCheck).
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace l02_trace {

// A path of its own for each test binary and test, in the temporary directory.
// A threadsafe-style death test runs the test again in a new process: the
// parent's pid reaches it through the environment, so both name the same file.
inline std::string trace_path(const char* test) {
    if (!std::getenv("FIB_TEST_TRACE_PID")) setenv("FIB_TEST_TRACE_PID", std::to_string(getpid()).c_str(), 1);
    return testing::TempDir() + "fib_" + test + "_" + std::getenv("FIB_TEST_TRACE_PID") + ".json";
}

inline std::string read_file(const std::string& path) {
    std::ifstream file(path);
    std::stringstream text;
    text << file.rdbuf();
    return text.str();
}

// How many times `needle` occurs in `text`.
inline int count(const std::string& text, const std::string& needle) {
    int found = 0;
    for (auto at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++found;
    return found;
}

// The value of `"key":` in one line of the file, up to the next ',' or '}'.
inline std::string field(const std::string& line, const std::string& key) {
    const auto at = line.find("\"" + key + "\":");
    if (at == std::string::npos) return "";
    const auto from = at + key.size() + 3;
    std::string value = line.substr(from, line.find_first_of(",}", from) - from);
    if (!value.empty() && value.front() == '"') value = value.substr(1, value.size() - 2);
    return value;
}

// The instant events ("spawn", "wake", "end"), in the order written, as
// "name/tid", joined by spaces: "spawn/1 spawn/2 end/1 ...".
inline std::string instants(const std::string& text) {
    std::istringstream lines(text);
    std::string result;
    for (std::string line; std::getline(lines, line);) {
        if (line.find("\"ph\":\"i\"") == std::string::npos) continue;
        if (!result.empty()) result += ' ';
        result += field(line, "name") + "/" + field(line, "tid");
    }
    return result;
}

// Whether `text` is one whole JSON value (RFC 8259's grammar) and nothing after it
// but white space: a file cut short, or one with a torn event in it, is not.
class JsonCheck {
public:
    static bool valid(const std::string& text) {
        JsonCheck check(text);
        if (!check.value()) return false;
        check.skip_space();
        return check.at_ == text.size();
    }

private:
    explicit JsonCheck(const std::string& text) : text_(text) {}

    bool value() {
        skip_space();
        if (at_ >= text_.size()) return false;
        switch (text_[at_]) {
        case '{': return items('}', true);
        case '[': return items(']', false);
        case '"': return string();
        case 't': return word("true");
        case 'f': return word("false");
        case 'n': return word("null");
        default: return number();
        }
    }

    // An object's "key": value members or an array's values, up to `close`.
    bool items(char close, bool keyed) {
        ++at_;
        skip_space();
        if (next_is(close)) return true;
        for (;;) {
            skip_space();
            if (keyed && !(at_ < text_.size() && text_[at_] == '"' && string())) return false;
            skip_space();
            if (keyed && !next_is(':')) return false;
            if (!value()) return false;
            skip_space();
            if (next_is(close)) return true;
            if (!next_is(',')) return false;
        }
    }

    bool string() {
        ++at_;
        while (at_ < text_.size()) {
            const unsigned char c = static_cast<unsigned char>(text_[at_++]);
            if (c == '"') return true;
            if (c < 0x20) return false;
            if (c != '\\') continue;
            if (at_ >= text_.size()) return false;
            const char escaped = text_[at_++];
            if (escaped == 'u') {
                for (int i = 0; i < 4; ++i, ++at_)
                    if (at_ >= text_.size() || !std::isxdigit(static_cast<unsigned char>(text_[at_])))
                        return false;
            } else if (!one_of("\"\\/bfnrt", escaped)) {
                return false;
            }
        }
        return false;
    }

    // -?digits(.digits)?([eE][+-]?digits)?
    bool number() {
        next_is('-');
        if (!digits()) return false;
        if (next_is('.') && !digits()) return false;
        if (next_is('e') || next_is('E')) {
            if (!next_is('+')) next_is('-');
            if (!digits()) return false;
        }
        return true;
    }

    bool digits() {
        const std::size_t from = at_;
        while (at_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[at_]))) ++at_;
        return at_ > from;
    }

    bool word(const char* expected) {
        const std::string wanted = expected;
        if (text_.compare(at_, wanted.size(), wanted) != 0) return false;
        at_ += wanted.size();
        return true;
    }

    bool next_is(char c) {
        if (at_ >= text_.size() || text_[at_] != c) return false;
        ++at_;
        return true;
    }

    void skip_space() {
        while (at_ < text_.size() && one_of(" \t\n\r", text_[at_])) ++at_;
    }

    static bool one_of(const char* set, char c) { return c != '\0' && std::strchr(set, c); }

    const std::string& text_;
    std::size_t at_ = 0;
};

// Runs `scenario` in a child with FIB_TRACE=path (and FIB_TRACE_EVENTS=events
// unless null), checks the line the child prints on stderr as it exits, and
// gives the file's text.
inline std::string run_traced(const std::string& path, const char* events, void (*scenario)()) {
    std::remove(path.c_str());
    EXPECT_EXIT(
        {
            setenv("FIB_TRACE", path.c_str(), 1);
            if (events) setenv("FIB_TRACE_EVENTS", events, 1);
            scenario();
            std::exit(0);
        },
        testing::ExitedWithCode(0), "fib: FIB_TRACE: 1 fiber manager\\(s\\) written to");
    std::string text = read_file(path);
    std::remove(path.c_str());
    return text;
}

}  // namespace l02_trace
