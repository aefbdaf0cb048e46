// L02_trace_file.hpp — lesson 2: run a scenario traced in a child process and read the file it writes.
//
// The child sets FIB_TRACE (and FIB_TRACE_EVENTS, when given), runs the
// scenario and exits, which writes the trace; the parent reads the file back
// and looks at it by substrings and by its instant events, in order.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
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
