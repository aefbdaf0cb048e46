// trace_json.hpp — lesson 2: Chrome trace-event JSON, one event at a time, for a Trace's replay.
//
// Each manager is a "process" (pid 1, 2, ... in the order they were made) and
// each of its fibers a "thread" (tid = fiber id), named by metadata events.
// trace_replay.cpp turns a Trace's steps into the slices and instants written
// here; times are microseconds since the first trace began.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <unordered_map>

#include "fib/trace.hpp"

namespace fib {

class TraceJson {
public:
    TraceJson(std::FILE* out, std::uint64_t origin_ns) : out_(out), origin_ns_(origin_ns) {}

    // A manager's metadata: its process (with what its trace dropped, and
    // "still running at exit" if it was) and a named thread per fiber.
    void start_manager(const Trace& trace);
    // "fiber 3 (producer)", from the names the manager's trace kept.
    std::string label(std::int64_t id) const;

    // A complete ("X") slice and an instant ("i") event on fiber `id`'s track;
    // `args` is the inside of the args object, already JSON.
    void slice(std::uint64_t id, std::uint64_t from, std::uint64_t to, const std::string& name,
               const char* category, const std::string& args);
    void instant(std::uint64_t id, std::uint64_t at, const char* name, const std::string& args);

    static std::string escape(const std::string& text);

private:
    void meta(std::uint64_t id, const char* what, const std::string& name, const std::string& more);
    double micros(std::uint64_t at) const { return at < origin_ns_ ? 0.0 : (at - origin_ns_) / 1e3; }
    const char* separator() { return first_ ? (first_ = false, "\n") : ",\n"; }

    std::FILE* out_;
    std::uint64_t origin_ns_;
    int pid_ = 0;
    bool first_ = true;
    std::unordered_map<std::uint64_t, const char*> names_;
};

// trace_replay.cpp: the steps of one manager's trace, as slices and instants.
void replay_trace(const Trace& trace, TraceJson& json);

}  // namespace fib
