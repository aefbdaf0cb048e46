// trace.hpp — lesson 2: an optional timeline of a manager's fibers, written at exit for Perfetto.
//
// With FIB_TRACE=path in the environment, each FiberManager gets a Trace and
// tells it every step of its fibers' lives: spawned, run (switched in),
// yielded, parked (with its WaitSite), woken (by whom), ended. A layer above
// may add spans of its own to the running fiber's track (begin/end). Events go
// into a buffer of this manager's own. At exit every manager's buffer is
// written to the one file as Chrome trace-event JSON (trace_json.hpp): one
// track per fiber, its running, ready and parked spans as slices.
//
// FIB_TRACE_EVENTS (1,000,000 by default) bounds everything a Trace keeps: at
// most that many events, and a fiber's name only with its kept spawn (so no
// more names than events). What does not fit is counted, not kept, and the
// file says how many events and names were dropped.
//
// Threads. A Trace is written to by its manager's thread, at every hook, and
// read by the writer, on the thread that calls exit(), while managers on other
// threads may still run. Each Trace has a lock: every hook holds it while it
// records, and the writer holds it while it writes that Trace, so a manager's
// thread waits at its next hook for as long as its own trace is being written.
// A manager still running at exit is written as far as it got when the writer
// took its lock: its fibers' open slices end there, and the file names it
// "still running at exit"; what it records afterwards is not written. No Trace
// is ever freed, so a manager may go on recording after the file is written.
//
// Without FIB_TRACE the manager's pointer to its Trace stays null, and each
// hook costs one predictable branch (the lock is taken only past it):
//
//   if (trace_) [[unlikely]] trace_->switched(*self, *next);
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

#include "fib/fiber_record.hpp"

namespace fib {

enum class TraceKind : std::uint8_t { Spawn, Run, Yield, Park, Wake, End, SpanBegin, SpanEnd };

// One step. What `value`, `text` and `object` hold depends on the kind:
//   Spawn: value = the spawner's id         Wake: value = the waker's id
//   Park: text = the site's what, value = the id of the fiber waited for (-1: none),
//         object = the object waited on
//   SpanBegin: text = the span's name, object = an argument's name, value = its value
//   SpanEnd: object = a result's name, value = the result
// Every text is a string literal, as every WaitSite's `what` is: it is read at exit.
struct TraceEvent {
    std::uint64_t time_ns;
    std::uint64_t fiber;
    std::int64_t value;
    const char* text;
    const void* object;
    TraceKind kind;
};

// A fiber's name as it was when it was spawned (its record may be gone at exit).
struct TraceName {
    std::uint64_t fiber;
    char name[32];
};

class Trace {
public:
    // A Trace for a new manager whose main fiber is `main`, kept until exit
    // (where it is written), or nullptr when FIB_TRACE is not set.
    static Trace* for_new_manager(const FiberRecord& main);

    // The hooks: each takes the lock once (see Threads above).
    void spawn(const FiberRecord& fiber, const FiberRecord& by);
    // One hook per switch, in switch_to: `from` yielded (it is Ready again) or
    // parked (Blocked, its WaitSite says on what), or it ended (End was told
    // already), and `to` runs. One branch on the switch path, not one per cause.
    // Out of line, so that the switch path holds only the branch and a call.
    void switched(const FiberRecord& from, const FiberRecord& to);
    void wake(const FiberRecord& fiber, const FiberRecord& by) { add(TraceKind::Wake, fiber.id, by.id); }
    void end(const FiberRecord& fiber) { add(TraceKind::End, fiber.id, 0); }
    void begin(const FiberRecord& fiber, const char* what, const char* arg_name, std::int64_t arg) {
        add(TraceKind::SpanBegin, fiber.id, arg, what, arg_name);
    }
    void end_span(const FiberRecord& fiber, const char* result_name, std::int64_t result) {
        add(TraceKind::SpanEnd, fiber.id, result, nullptr, result_name);
    }
    // The manager is gone: its fibers' last spans end now.
    void close();

    // For the writer (trace_json.hpp), which reads the rest only while it holds lock().
    std::mutex& lock() { return lock_; }
    int ordinal() const { return ordinal_; }
    int thread_id() const { return thread_id_; }
    std::uint64_t closed_ns() const { return closed_ns_; }
    std::uint64_t dropped() const { return dropped_; }
    std::uint64_t dropped_names() const { return dropped_names_; }
    const std::vector<TraceEvent>& events() const { return events_; }
    const std::vector<TraceName>& names() const { return names_; }

private:
    Trace(int ordinal, std::size_t capacity);
    // Takes the lock and records one event.
    void add(TraceKind kind, std::uint64_t fiber, std::int64_t value, const char* text = nullptr,
             const void* object = nullptr);
    // These three run under the lock. record() says whether the event was kept.
    bool record(TraceKind kind, std::uint64_t fiber, std::int64_t value, const char* text = nullptr,
                const void* object = nullptr);
    void park(const FiberRecord& fiber, const WaitSite& site);
    void name(const FiberRecord& fiber);

    int ordinal_;           // 1 for the process's first traced manager, 2 for the next, ...
    int thread_id_;         // the manager's thread (gettid)
    std::size_t capacity_;  // FIB_TRACE_EVENTS
    std::mutex lock_;       // the manager's thread records under it, the writer reads under it
    std::uint64_t closed_ns_ = 0;
    std::uint64_t dropped_ = 0;
    std::uint64_t dropped_names_ = 0;  // fibers whose spawn was dropped, and their names with it
    std::vector<TraceEvent> events_;
    std::vector<TraceName> names_;  // no longer than events_: one per kept Spawn, and main's
};

// The monotonic clock in nanoseconds, as every event's time.
std::uint64_t trace_now_ns();

// trace_json.cpp: every trace of the process, as trace-event JSON, to `path`
// (trace_json.hpp, trace_replay.cpp).
bool write_trace_json(const char* path, const std::vector<Trace*>& traces, std::uint64_t origin_ns);

}  // namespace fib
