// trace_replay.cpp — lesson 2: a manager's trace replayed into slices, one after another per fiber.
//
// The steps become complete slices on a fiber's track:
//
//   spawn .. run: "ready"   run .. yield/park/end: "running"   park .. wake: "parked"
//
// plus instants for spawn, wake (args: by whom) and end, and a slice for each
// span a layer above added.
#include <cstdio>
#include <unordered_map>

#include "fib/trace_json.hpp"

namespace fib {
namespace {

// Where one fiber is, while the events are replayed.
struct Track {
    const char* state = nullptr;  // "ready", "running", "parked"; nullptr before spawn
    std::uint64_t since = 0;
    const TraceEvent* park = nullptr;  // the Park event while parked
    const TraceEvent* span = nullptr;  // an open SpanBegin
};

class Replay {
public:
    explicit Replay(TraceJson& json) : json_(json) {}

    void step(Track& track, const TraceEvent& event) {
        const std::uint64_t id = event.fiber, at = event.time_ns;
        switch (event.kind) {
        case TraceKind::Spawn:
            json_.instant(id, at, "spawn", by(event.value));
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
        case TraceKind::Wake:
            close(track, id, at, by(event.value));
            json_.instant(id, at, "wake", by(event.value));
            return open(track, "ready", at);
        case TraceKind::End:
            close(track, id, at, "");
            track.state = nullptr;
            return json_.instant(id, at, "end", "");
        case TraceKind::SpanBegin:
            track.span = &event;
            return;
        case TraceKind::SpanEnd:
            if (!track.span) return;  // its begin was dropped
            json_.slice(id, track.span->time_ns, at, track.span->text, "span",
                        arg(track.span->object, track.span->value) + "," + arg(event.object, event.value));
            track.span = nullptr;
            return;
        }
    }

    // A parked slice is named after its wait site, as the deadlock report says it.
    void close(Track& track, std::uint64_t id, std::uint64_t at, const std::string& woken) {
        if (!track.state) return;
        if (!track.park) return json_.slice(id, track.since, at, track.state, track.state, woken);
        const TraceEvent& park = *track.park;
        const std::string what = park.text ? park.text : "?";
        std::string site = what;
        if (park.value >= 0) site += ", waiting for " + json_.label(park.value);
        if (park.object) {
            char object[32];
            std::snprintf(object, sizeof object, ", on %p", park.object);
            site += object;
        }
        std::string args = "\"site\":\"" + TraceJson::escape(site) + "\"";
        if (!woken.empty()) args += "," + woken;
        json_.slice(id, track.since, at, "parked: " + what, "parked", args);
    }

private:
    static void open(Track& track, const char* state, std::uint64_t at) {
        track.state = state;
        track.since = at;
        track.park = nullptr;
    }

    std::string by(std::int64_t id) const {
        return "\"by\":\"" + TraceJson::escape(json_.label(id)) + "\"";
    }

    static std::string arg(const void* name, std::int64_t value) {
        return "\"" + TraceJson::escape(static_cast<const char*>(name)) + "\":" + std::to_string(value);
    }

    TraceJson& json_;
};

}  // namespace

// The fibers still running, ready or parked at the end get a slice up to the
// manager's destruction, or up to now if it still exists.
void replay_trace(const Trace& trace, TraceJson& json) {
    Replay replay(json);
    std::unordered_map<std::uint64_t, Track> tracks;
    std::uint64_t last = 0;
    for (const TraceEvent& event : trace.events()) {
        replay.step(tracks[event.fiber], event);
        last = event.time_ns;
    }
    const std::uint64_t end = trace.closed_ns() ? trace.closed_ns() : trace_now_ns();
    for (auto& [fiber, track] : tracks) replay.close(track, fiber, end > last ? end : last, "");
}

}  // namespace fib
