// trace_json.cpp — lesson 2: the traces of a process as Chrome trace-event JSON, for Perfetto.
#include "fib/trace_json.hpp"

#include <cinttypes>

namespace fib {

bool write_trace_json(const char* path, const std::vector<Trace*>& traces, std::uint64_t origin_ns) {
    std::FILE* out = std::fopen(path, "w");
    if (!out) return false;
    std::fprintf(out, "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[");
    TraceJson json(out, origin_ns);
    // Each trace under its lock (trace.hpp): its manager's thread, if it still
    // runs, waits at its next hook until its trace is written.
    for (Trace* trace : traces) {
        std::lock_guard<std::mutex> hold(trace->lock());
        json.start_manager(*trace);
        replay_trace(*trace, json);
    }
    std::fprintf(out, "\n]}\n");
    return std::fclose(out) == 0;
}

void TraceJson::start_manager(const Trace& trace) {
    pid_ = trace.ordinal();
    names_.clear();
    for (const TraceName& entry : trace.names()) names_[entry.fiber] = entry.name;
    const std::string process = "fib manager " + std::to_string(pid_) + " (thread " +
                                std::to_string(trace.thread_id()) +
                                (trace.closed_ns() ? ")" : ", still running at exit)");
    meta(0, "process_name", process,
         ",\"dropped_events\":" + std::to_string(trace.dropped()) +
             ",\"dropped_names\":" + std::to_string(trace.dropped_names()));
    for (const TraceName& entry : trace.names()) meta(entry.fiber, "thread_name", label(entry.fiber), "");
}

std::string TraceJson::label(std::int64_t id) const {
    auto found = names_.find(static_cast<std::uint64_t>(id));
    std::string text = "fiber " + std::to_string(id);
    if (found != names_.end() && found->second[0]) text += std::string(" (") + found->second + ")";
    return text;
}

void TraceJson::slice(std::uint64_t id, std::uint64_t from, std::uint64_t to, const std::string& name,
                      const char* category, const std::string& args) {
    std::fprintf(out_,
                 "%s{\"ph\":\"X\",\"pid\":%d,\"tid\":%" PRIu64 ",\"ts\":%.3f,\"dur\":%.3f,"
                 "\"name\":\"%s\",\"cat\":\"%s\",\"args\":{%s}}",
                 separator(), pid_, id, micros(from), (to - from) / 1e3, escape(name).c_str(),
                 category, args.c_str());
}

void TraceJson::instant(std::uint64_t id, std::uint64_t at, const char* name, const std::string& args) {
    std::fprintf(out_,
                 "%s{\"ph\":\"i\",\"s\":\"t\",\"pid\":%d,\"tid\":%" PRIu64 ",\"ts\":%.3f,"
                 "\"name\":\"%s\",\"cat\":\"%s\",\"args\":{%s}}",
                 separator(), pid_, id, micros(at), name, name, args.c_str());
}

void TraceJson::meta(std::uint64_t id, const char* what, const std::string& name,
                     const std::string& more) {
    std::fprintf(out_,
                 "%s{\"ph\":\"M\",\"pid\":%d,\"tid\":%" PRIu64 ",\"name\":\"%s\","
                 "\"args\":{\"name\":\"%s\"%s}}",
                 separator(), pid_, id, what, escape(name).c_str(), more.c_str());
}

// Quotes and backslashes escaped; control characters, which no name should
// hold, become '?'.
std::string TraceJson::escape(const std::string& text) {
    std::string result;
    for (char c : text) {
        if (c == '"' || c == '\\') result += '\\';
        result += static_cast<unsigned char>(c) < 0x20 ? '?' : c;
    }
    return result;
}

}  // namespace fib
