// bench.hpp — make bench: timing loops, medians of repetitions, and the table and RESULT lines.
//
// Every figure is measured kRepetitions times; the table shows the median with
// the min and max, and compares figures measured in the same run (these
// machines drift by tens of percent between runs, so only ratios travel).
//
// Each lesson's rows live in tests/bench/LNN_*.cpp and register a Section; the
// bench program of stage N (make bench-lessonN) is built from the rows of
// lessons 1..N, so it measures exactly what that stage has.
#pragma once

#include <chrono>
#include <string>
#include <utility>
#include <vector>

namespace bench {

constexpr int kRepetitions = 7;

struct Summary {
    double median = 0, min = 0, max = 0;
};

Summary summarize(std::vector<double> values);

// BENCH_SCALE in the environment multiplies every operation count. CI (.ci/run) runs
// make bench with 0.1, to see every row work and print its RESULT line in a tenth of
// the time; its times are then rougher, and the READMEs' numbers come from full runs.
double operation_scale();

// `run(operations)` does the work; the result is nanoseconds per operation,
// summarised over the repetitions. One untimed warm-up run comes first.
template <class Run>
Summary ns_per_op(long operations, Run run) {
    using Clock = std::chrono::steady_clock;
    if (operation_scale() != 1.0)
        operations = static_cast<long>(static_cast<double>(operations) * operation_scale()) + 2;
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

// Two figures timed turn about, repetition by repetition (a, b, a, b, ...), for
// a ratio whose two sides run long enough for the machine to drift between
// them: the drift then falls on both alike. Each is nanoseconds per operation.
template <class RunA, class RunB>
std::pair<Summary, Summary> ns_per_op_turn_about(long operations, RunA run_a, RunB run_b) {
    using Clock = std::chrono::steady_clock;
    if (operation_scale() != 1.0)
        operations = static_cast<long>(static_cast<double>(operations) * operation_scale()) + 2;
    run_a(operations / 10 + 1);
    run_b(operations / 10 + 1);
    std::vector<double> a, b;
    auto time = [operations](auto& run, std::vector<double>& values) {
        const auto start = Clock::now();
        run(operations);
        const std::chrono::duration<double, std::nano> elapsed = Clock::now() - start;
        values.push_back(elapsed.count() / static_cast<double>(operations));
    };
    for (int i = 0; i < kRepetitions; ++i) {
        time(run_a, a);
        time(run_b, b);
    }
    return {summarize(std::move(a)), summarize(std::move(b))};
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
const Figure* find(const std::vector<Figure>& figures, const std::string& name);  // or nullptr

// One lesson's rows. `bench NAME...` runs only the sections named; `bench` all,
// those that fork a process first (before any section has started a thread),
// then the rest in lesson order.
struct Section {
    const char* name;  // "switch"
    int lesson;
    bool forks;        // runs a child process: measured before any thread exists
    void (*measure)(std::vector<Figure>& figures);
};

// A number the lesson's text sets for a figure, or for the ratio of two figures
// of the same run (`per` not null: figure / per). Printed as met or missed, never
// asserted: speed is for make bench, not for make test.
struct Target {
    const char* what;    // "switch_context, times faster than swapcontext (>= 30)"
    const char* figure;  // a row's name
    const char* per;     // nullptr, or the row it is divided by
    bool at_least;       // value >= limit, else value <= limit
    double limit;
    bool inverted = false;  // per / figure instead of figure / per ("times faster")
};

// For namespace-scope registration: `const bool registered = bench::add(Section{...});`.
bool add(const Section& section);
bool add(const Target& target);

// The process's resident memory, from /proc/self/statm (or another pid's).
long resident_bytes(int pid = 0);

// The CPU time (user + system) every thread of this process has used so far, in microseconds.
double process_cpu_us();

}  // namespace bench
