// bench_main.cpp — make bench: the course's numbers side by side, one table and RESULT lines.
//
// Lessons 1-4: the raw switch against a function call, swapcontext and two OS
// threads; the manager's yield, spawn + join and CondVar hand-off against the
// raw switch and std::thread; memory per blocked fiber and per idle connection.
// Lesson 6: the switch that also loads %fs/%gs, spawn + join with a TLS block
// per fiber, and what those blocks cost in memory.
// The echo servers under load are `make bench-echo` (scripts/bench-echo.sh).
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>
#include <thread>

#include "bench.hpp"

namespace bench {

Summary summarize(std::vector<double> values) {
    std::sort(values.begin(), values.end());
    return {values[values.size() / 2], values.front(), values.back()};
}

void compare(Figure& figure, const std::string& text, const std::string& key, double ratio) {
    char table[96], result[96];
    std::snprintf(table, sizeof table, "%s%.1fx %s", figure.compared.empty() ? "" : "; ", ratio,
                  text.c_str());
    std::snprintf(result, sizeof result, " %s=%.2f", key.c_str(), ratio);
    figure.compared += table;
    figure.result_extra += result;
}

const Figure* find(const std::vector<Figure>& figures, const std::string& name) {
    for (const Figure& figure : figures)
        if (figure.name == name) return &figure;
    return nullptr;
}

void print_table(const std::vector<Figure>& figures) {
    std::printf("\n%-26s %10s %10s %10s  %-6s %s\n", "figure", "median", "min", "max", "unit",
                "compared, same run");
    for (const Figure& f : figures)
        std::printf("%-26s %10.1f %10.1f %10.1f  %-6s %s\n", f.name.c_str(), f.value.median,
                    f.value.min, f.value.max, f.unit.c_str(), f.compared.c_str());
}

void print_results(const std::vector<Figure>& figures) {
    std::printf("\n");
    for (const Figure& f : figures)
        std::printf("RESULT name=%s %s=%.2f min=%.2f max=%.2f reps=%d%s\n", f.name.c_str(),
                    f.unit.c_str(), f.value.median, f.value.min, f.value.max, f.repetitions,
                    f.result_extra.c_str());
}

long resident_bytes(int pid) {
    const std::string path = pid ? "/proc/" + std::to_string(pid) + "/statm" : "/proc/self/statm";
    std::ifstream statm(path);
    long size = 0, resident = 0;
    statm >> size >> resident;
    return resident * sysconf(_SC_PAGESIZE);
}

}  // namespace bench

namespace {

std::string cpu_model() {
    std::ifstream cpuinfo("/proc/cpuinfo");
    for (std::string line; std::getline(cpuinfo, line);)
        if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
    return "unknown CPU";
}

// A target of the course, checked against this run: met or missed. `value`
// is computed from figures that a partial run (`bench switch`) may lack.
void target(const char* what, double value, const char* op, double limit) {
    if (!(value > 0)) return;
    const bool met = op[0] == '>' ? value >= limit : value <= limit;
    std::printf("  %-56s %8.1f  %s\n", what, value, met ? "met" : "MISSED (see the lesson's Measured)");
}

bool wanted(int argc, char** argv, const char* section) {
    if (argc < 2) return true;
    for (int i = 1; i < argc; ++i)
        if (std::string(argv[i]) == section) return true;
    return false;
}

}  // namespace

// `bench [memory] [switch] [manager] [tls]` runs only those sections; `bench` runs all.
int main(int argc, char** argv) {
    const auto start = std::chrono::steady_clock::now();
    std::printf("make bench on %s, %u cores; medians of %d repetitions\n", cpu_model().c_str(),
                std::thread::hardware_concurrency(), bench::kRepetitions);
    std::fflush(stdout);
    std::vector<bench::Figure> figures;
    // Memory first: it forks a server process, best done before any thread exists.
    if (wanted(argc, argv, "memory")) bench::memory_costs(figures);
    if (wanted(argc, argv, "switch")) bench::switch_costs(figures);
    if (wanted(argc, argv, "manager")) bench::manager_costs(figures);
    if (wanted(argc, argv, "tls")) bench::tls_costs(figures);
    bench::print_table(figures);

    auto median = [&](const char* name) {
        const bench::Figure* figure = bench::find(figures, name);
        return figure ? figure->value.median : 0.0 / 0.0;  // NaN: target() skips it
    };
    std::printf("\ntargets:\n");
    target("switch_context, times faster than swapcontext (>= 30)",
           median("swapcontext") / median("switch_context"), ">=", 30);
    target("switch_context, times faster than thread_pingpong (>= 100)",
           median("thread_pingpong") / median("switch_context"), ">=", 100);
    target("switch_context minus call, ns (a few)", median("switch_context") - median("call"),
           "<=", 5);
    target("yield / switch_context (<= 2)", median("yield") / median("switch_context"), "<=", 2);
    target("spawn_join, ns (<= 100)", median("spawn_join"), "<=", 100);
    target("conn_rss, bytes per idle connection (<= 16384)", median("conn_rss"), "<=", 16384);

    bench::print_results(figures);
    const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
    std::printf("\nmake bench took %.0f s\n", took.count());
}
