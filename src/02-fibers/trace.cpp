// trace.cpp — lesson 2: the Trace's buffer, the process's list of traces, and writing them at exit.
#include "fib/trace.hpp"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <mutex>

namespace fib {
namespace {

constexpr std::size_t kDefaultCapacity = 1'000'000;
constexpr std::size_t kFirstReserve = 4096;

// Every Trace of the process. Managers on several threads register here, so
// it is locked; the events themselves go to each manager's own buffer, under
// that Trace's own lock. The writer takes this lock, then each Trace's in turn.
struct Registry {
    std::mutex lock;
    std::vector<Trace*> traces;
    const char* path = nullptr;
    std::uint64_t origin_ns = 0;  // time 0 of the file: when the first trace began
};

// Never destroyed: a manager that outlives exit's start (a static one, one on
// another thread) may still record, and its Trace stays reachable from here.
Registry& registry() {
    static Registry& instance = *new Registry;
    return instance;
}

// At exit: one file for every manager the process traced, and one line to say so.
void write_at_exit() {
    Registry& all = registry();
    std::lock_guard<std::mutex> hold(all.lock);
    if (write_trace_json(all.path, all.traces, all.origin_ns))
        std::fprintf(stderr, "fib: FIB_TRACE: %zu fiber manager(s) written to %s\n",
                     all.traces.size(), all.path);
    else
        std::fprintf(stderr, "fib: FIB_TRACE: could not write %s\n", all.path);
}

std::size_t capacity_from_environment() {
    const char* text = std::getenv("FIB_TRACE_EVENTS");
    if (!text || !*text) return kDefaultCapacity;
    return static_cast<std::size_t>(std::strtoull(text, nullptr, 10));
}

}  // namespace

std::uint64_t trace_now_ns() {
    timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return static_cast<std::uint64_t>(now.tv_sec) * 1'000'000'000u + now.tv_nsec;
}

// The traces live until the process ends: a manager may be destroyed long
// before exit, and its timeline is written then.
Trace* Trace::for_new_manager(const FiberRecord& main) {
    const char* path = std::getenv("FIB_TRACE");
    if (!path || !*path) return nullptr;
    Registry& all = registry();
    Trace* trace;
    {
        std::lock_guard<std::mutex> hold(all.lock);
        if (all.traces.empty()) {
            all.path = path;
            all.origin_ns = trace_now_ns();
            std::atexit(write_at_exit);
        }
        trace = new Trace(static_cast<int>(all.traces.size()) + 1, capacity_from_environment());
        all.traces.push_back(trace);
    }
    // main is running as the manager begins. The writer may already see this
    // trace in the list, so even this first event is recorded under its lock.
    std::lock_guard<std::mutex> hold(trace->lock_);
    if (trace->record(TraceKind::Run, main.id, 0))
        trace->name(main);
    else
        ++trace->dropped_names_;
    return trace;
}

void Trace::switched(const FiberRecord& from, const FiberRecord& to) {
    std::lock_guard<std::mutex> hold(lock_);
    if (from.state == FiberState::Ready) record(TraceKind::Yield, from.id, 0);
    if (from.state == FiberState::Blocked) park(from, from.waiting_for);
    record(TraceKind::Run, to.id, 0);
}

Trace::Trace(int ordinal, std::size_t capacity)
    : ordinal_(ordinal), thread_id_(static_cast<int>(gettid())), capacity_(capacity) {
    events_.reserve(capacity < kFirstReserve ? capacity : kFirstReserve);
}

void Trace::add(TraceKind kind, std::uint64_t fiber, std::int64_t value, const char* text,
                const void* object) {
    std::lock_guard<std::mutex> hold(lock_);
    record(kind, fiber, value, text, object);
}

// Tracing is on: the buffer grows (amortised) up to its cap, then counts.
bool Trace::record(TraceKind kind, std::uint64_t fiber, std::int64_t value, const char* text,
                   const void* object) {
    if (events_.size() >= capacity_) {
        ++dropped_;
        return false;
    }
    events_.push_back(TraceEvent{trace_now_ns(), fiber, value, text, object, kind});
    return true;
}

void Trace::name(const FiberRecord& fiber) {
    TraceName entry{fiber.id, {}};
    for (std::size_t i = 0; i + 1 < sizeof entry.name && fiber.name[i]; ++i)
        entry.name[i] = fiber.name[i];
    names_.push_back(entry);
}

// A name without its spawn would name a track with no events: once the buffer
// is full it stays full, so a fiber whose spawn was dropped has nothing kept.
void Trace::spawn(const FiberRecord& fiber, const FiberRecord& by) {
    std::lock_guard<std::mutex> hold(lock_);
    if (record(TraceKind::Spawn, fiber.id, static_cast<std::int64_t>(by.id)))
        name(fiber);
    else
        ++dropped_names_;
}

void Trace::park(const FiberRecord& fiber, const WaitSite& site) {
    const std::int64_t waited_for = site.fiber ? static_cast<std::int64_t>(site.fiber->id) : -1;
    record(TraceKind::Park, fiber.id, waited_for, site.what, site.object);
}

void Trace::close() {
    std::lock_guard<std::mutex> hold(lock_);
    closed_ns_ = trace_now_ns();
}

}  // namespace fib
