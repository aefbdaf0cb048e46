// bench.hpp — make bench: timing loops, medians of repetitions, and the table and RESULT lines.
//
// Every figure is measured kRepetitions times; the table shows the median with
// the min and max, and compares figures measured in the same run (these
// machines drift by tens of percent between runs, so only ratios travel).
#pragma once

#include <algorithm>
#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include "fib/condvar.hpp"
#include "fib/fiber.hpp"

namespace bench {

constexpr int kRepetitions = 7;

struct Summary {
    double median = 0, min = 0, max = 0;
};

Summary summarize(std::vector<double> values);

// `run(operations)` does the work; the result is nanoseconds per operation,
// summarised over the repetitions. One untimed warm-up run comes first.
template <class Run>
Summary ns_per_op(long operations, Run run) {
    using Clock = std::chrono::steady_clock;
    run(operations / 10 + 1);
    std::vector<double> values;
    for (int i = 0; i < kRepetitions; ++i) {
        const auto start = Clock::now();
        run(operations);
        const std::chrono::duration<double, std::nano> elapsed = Clock::now() - start;
        values.push_back(elapsed.count() / static_cast<double>(operations));
    }
    return summarize(std::move(values));
}

// Spawns `count` detached fibers on `manager`, lets each run once and block on a
// CondVar, and returns what `measure()` says while they are all blocked; then
// releases them and waits until they have ended. For the memory rows: a blocked
// fiber holds its record, its stack and whatever its environment gave it.
template <class Measure>
auto while_fibers_blocked(fib::FiberManager& manager, long count, Measure measure) {
    fib::CondVar released_cv;
    bool released = false;
    for (long i = 0; i < count; ++i)
        fib::Fiber([&] { released_cv.wait([&released] { return released; }); }).detach();
    manager.yield();  // every fiber runs once and blocks in wait()
    const auto measured = measure();
    released = true;
    released_cv.notify_all();
    manager.wait_for_all();
    return measured;
}

// One row of the table and its RESULT line.
struct Figure {
    Figure(std::string name_, Summary value_, std::string unit_ = "ns")
        : name(std::move(name_)), value(value_), unit(std::move(unit_)) {}
    std::string name;
    Summary value;
    std::string unit = "ns";    // the RESULT key too: "ns", "bytes"
    std::string compared;       // the table's last column
    std::string result_extra;   // " key=value ..." appended to the RESULT line
    int repetitions = kRepetitions;
};

// Adds "2.3x call" to the table and " call_ratio=2.30" to the RESULT line.
void compare(Figure& figure, const std::string& text, const std::string& key, double ratio);

void print_table(const std::vector<Figure>& figures);
void print_results(const std::vector<Figure>& figures);
const Figure* find(const std::vector<Figure>& figures, const std::string& name);  // or nullptr

// Each section measures its figures and appends them.
void switch_costs(std::vector<Figure>& figures);   // call, switch_context, swapcontext, threads
void manager_costs(std::vector<Figure>& figures);  // yield, spawn_join, condvar_pingpong, threads
void memory_costs(std::vector<Figure>& figures);   // fiber_rss, conn_rss
void tls_costs(std::vector<Figure>& figures);      // switch_fs/gs/arch_prctl, spawn_join_tls, TLS memory

// The process's resident memory, from /proc/self/statm (or another pid's).
long resident_bytes(int pid = 0);

}  // namespace bench
