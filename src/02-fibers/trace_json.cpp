// trace_json.cpp — lesson 2: the traces of a process as Chrome trace-event JSON, for Perfetto.
//
// Each manager is a "process" (pid 1, 2, ... in the order they were made) and
// each of its fibers a "thread" (tid = fiber id), named by metadata events.
// The steps become complete ("X") slices, one after another on a fiber's track:
//
//   spawn .. run: "ready"   run .. yield/park/end: "running"   park .. wake: "parked"
//
// plus instant ("i") events for spawn, wake (args: by whom) and end, and a
// slice for each span a layer above added. Times are microseconds since the
// first trace began.
#include <cinttypes>
#include <cstdio>
#include <string>
#include <unordered_map>

#include "fib/trace.hpp"

namespace fib {
namespace {

// Where one fiber is, while the events are replayed.
struct Track {
    const char* state = nullptr;  // "ready", "running", "parked"; nullptr before spawn
    std::uint64_t since = 0;
    const TraceEvent* park = nullptr;  // the Park event while parked
    const TraceEvent* span = nullptr;  // an open SpanBegin
};

class Writer {
public:
    Writer(std::FILE* out, std::uint64_t origin_ns) : out_(out), origin_ns_(origin_ns) {}

    void write(const Trace& trace) {
        pid_ = trace.ordinal();
        names_.clear();
        for (const TraceName& entry : trace.names()) names_[entry.fiber] = entry.name;
        std::string process = "fib manager " + std::to_string(pid_) + " (thread " +
                              std::to_string(trace.thread_id()) + ")";
        meta(0, "process_name", process, ",\"dropped_events\":" + std::to_string(trace.dropped()));
        for (const TraceName& entry : trace.names()) meta(entry.fiber, "thread_name", label(entry.fiber), "");
        std::unordered_map<std::uint64_t, Track> tracks;
        std::uint64_t last = 0;
        for (const TraceEvent& event : trace.events()) {
            step(tracks[event.fiber], event);
            last = event.time_ns;
        }
        const std::uint64_t end = trace.closed_ns() ? trace.closed_ns() : trace_now_ns();
        for (auto& [fiber, track] : tracks) close(track, fiber, end > last ? end : last, "");
    }

private:
    void step(Track& track, const TraceEvent& event) {
        const std::uint64_t id = event.fiber, at = event.time_ns;
        switch (event.kind) {
        case TraceKind::Spawn:
            instant(id, at, "spawn", "\"by\":\"" + escape(label(event.value)) + "\"");
            return open(track, "ready", at);
        case TraceKind::Run:
            close(track, id, at, "");
            return open(track, "running", at);
        case TraceKind::Yield:
            close(track, id, at, "");
            return open(track, "ready", at);
        case TraceKind::Park:
            close(track, id, at, "");
            open(track, "parked", at);
            track.park = &event;
            return;
        case TraceKind::Wake: {
            const std::string by = "\"by\":\"" + escape(label(event.value)) + "\"";
            close(track, id, at, by);
            instant(id, at, "wake", by);
            return open(track, "ready", at);
        }
        case TraceKind::End:
            close(track, id, at, "");
            track.state = nullptr;
            return instant(id, at, "end", "");
        case TraceKind::SpanBegin:
            track.span = &event;
            return;
        case TraceKind::SpanEnd:
            if (!track.span) return;  // its begin was dropped
            slice(id, track.span->time_ns, at, track.span->text, "span",
                  arg(track.span->object, track.span->value) + "," + arg(event.object, event.value));
            track.span = nullptr;
            return;
        }
    }

    void open(Track& track, const char* state, std::uint64_t at) {
        track.state = state;
        track.since = at;
        track.park = nullptr;
    }

    // A parked slice is named after its wait site, as the deadlock report says it.
    void close(Track& track, std::uint64_t id, std::uint64_t at, const std::string& woken) {
        if (!track.state) return;
        if (!track.park) return slice(id, track.since, at, track.state, track.state, woken);
        const TraceEvent& park = *track.park;
        std::string site = park.text ? park.text : "?";
        if (park.value >= 0) site += ", waiting for " + label(park.value);
        if (park.object) {
            char object[32];
            std::snprintf(object, sizeof object, ", on %p", park.object);
            site += object;
        }
        std::string args = "\"site\":\"" + escape(site) + "\"";
        if (!woken.empty()) args += "," + woken;
        slice(id, track.since, at, (std::string("parked: ") + (park.text ? park.text : "?")).c_str(),
              "parked", args);
    }

    void slice(std::uint64_t id, std::uint64_t from, std::uint64_t to, const char* name,
               const char* category, const std::string& args) {
        std::fprintf(out_,
                     "%s{\"ph\":\"X\",\"pid\":%d,\"tid\":%" PRIu64 ",\"ts\":%.3f,\"dur\":%.3f,"
                     "\"name\":\"%s\",\"cat\":\"%s\",\"args\":{%s}}",
                     separator(), pid_, id, micros(from), (to - from) / 1e3, escape(name).c_str(),
                     category, args.c_str());
    }

    void instant(std::uint64_t id, std::uint64_t at, const char* name, const std::string& args) {
        std::fprintf(out_,
                     "%s{\"ph\":\"i\",\"s\":\"t\",\"pid\":%d,\"tid\":%" PRIu64 ",\"ts\":%.3f,"
                     "\"name\":\"%s\",\"cat\":\"%s\",\"args\":{%s}}",
                     separator(), pid_, id, micros(at), name, name, args.c_str());
    }

    void meta(std::uint64_t id, const char* what, const std::string& name, const std::string& more) {
        std::fprintf(out_,
                     "%s{\"ph\":\"M\",\"pid\":%d,\"tid\":%" PRIu64 ",\"name\":\"%s\","
                     "\"args\":{\"name\":\"%s\"%s}}",
                     separator(), pid_, id, what, escape(name).c_str(), more.c_str());
    }

    static std::string arg(const void* name, std::int64_t value) {
        return "\"" + escape(static_cast<const char*>(name)) + "\":" + std::to_string(value);
    }

    std::string label(std::int64_t id) const {
        auto found = names_.find(static_cast<std::uint64_t>(id));
        std::string text = "fiber " + std::to_string(id);
        if (found != names_.end() && found->second[0]) text += std::string(" (") + found->second + ")";
        return text;
    }

    static std::string escape(const std::string& text) {
        std::string result;
        for (char c : text) {
            if (c == '"' || c == '\\') result += '\\';
            result += static_cast<unsigned char>(c) < 0x20 ? '?' : c;
        }
        return result;
    }

    double micros(std::uint64_t at) const { return at < origin_ns_ ? 0.0 : (at - origin_ns_) / 1e3; }
    const char* separator() { return first_ ? (first_ = false, "\n") : ",\n"; }

    std::FILE* out_;
    std::uint64_t origin_ns_;
    int pid_ = 0;
    bool first_ = true;
    std::unordered_map<std::uint64_t, const char*> names_;
};

}  // namespace

bool write_trace_json(const char* path, const std::vector<Trace*>& traces, std::uint64_t origin_ns) {
    std::FILE* out = std::fopen(path, "w");
    if (!out) return false;
    std::fprintf(out, "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[");
    Writer writer(out, origin_ns);
    for (const Trace* trace : traces) writer.write(*trace);
    std::fprintf(out, "\n]}\n");
    return std::fclose(out) == 0;
}

}  // namespace fib
