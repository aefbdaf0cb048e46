// bench_main.cpp — make bench: the course's numbers side by side, one table and RESULT lines.
//
// The rows come from the sections the lessons register (tests/bench/LNN_*.cpp):
// make bench-lessonN builds this program with lessons 1..N's. The echo servers
// under load are make bench-echo-lessonN (scripts/bench-echo.sh).
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>

#include "bench.hpp"

namespace bench {
namespace {

std::vector<Section>& sections() {
    static std::vector<Section> all;
    return all;
}

std::vector<Target>& targets() {
    static std::vector<Target> all;
    return all;
}

}  // namespace

bool add(const Section& section) {
    sections().push_back(section);
    return true;
}

bool add(const Target& target) {
    targets().push_back(target);
    return true;
}

double operation_scale() {
    static const double scale = [] {
        const char* text = std::getenv("BENCH_SCALE");
        const double value = text ? std::atof(text) : 1.0;
        return value > 0 ? value : 1.0;
    }();
    return scale;
}

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

long resident_bytes(int pid) {
    const std::string path = pid ? "/proc/" + std::to_string(pid) + "/statm" : "/proc/self/statm";
    std::ifstream statm(path);
    long size = 0, resident = 0;
    statm >> size >> resident;
    return resident * sysconf(_SC_PAGESIZE);
}

double process_cpu_us() {
    rusage usage{};
    ::getrusage(RUSAGE_SELF, &usage);
    return usage.ru_utime.tv_sec * 1e6 + usage.ru_utime.tv_usec + usage.ru_stime.tv_sec * 1e6 +
           usage.ru_stime.tv_usec;
}

}  // namespace bench

namespace {

std::string cpu_model() {
    std::ifstream cpuinfo("/proc/cpuinfo");
    for (std::string line; std::getline(cpuinfo, line);)
        if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
    return "unknown CPU";
}

void print_table(const std::vector<bench::Figure>& figures) {
    std::printf("\n%-26s %10s %10s %10s  %-6s %s\n", "figure", "median", "min", "max", "unit",
                "compared, same run");
    for (const bench::Figure& f : figures)
        std::printf("%-26s %10.1f %10.1f %10.1f  %-6s %s\n", f.name.c_str(), f.value.median,
                    f.value.min, f.value.max, f.unit.c_str(), f.compared.c_str());
}

void print_results(const std::vector<bench::Figure>& figures) {
    std::printf("\n");
    for (const bench::Figure& f : figures)
        std::printf("RESULT name=%s %s=%.2f min=%.2f max=%.2f reps=%d%s\n", f.name.c_str(),
                    f.unit.c_str(), f.value.median, f.value.min, f.value.max, f.repetitions,
                    f.result_extra.c_str());
}

// Each target whose figures this run has, met or missed.
void print_targets(const std::vector<bench::Figure>& figures) {
    bool header = false;
    for (const bench::Target& target : bench::targets()) {
        const bench::Figure* figure = bench::find(figures, target.figure);
        const bench::Figure* per = target.per ? bench::find(figures, target.per) : nullptr;
        if (!figure || (target.per && !per)) continue;
        double value = figure->value.median;
        if (per) value = target.inverted ? per->value.median / value : value / per->value.median;
        const bool met = target.at_least ? value >= target.limit : value <= target.limit;
        if (!header) std::printf("\ntargets:\n");
        header = true;
        std::printf("  %-60s %8.1f  %s\n", target.what, value, met ? "met" : "MISSED");
    }
}

bool wanted(int argc, char** argv, const char* section) {
    if (argc < 2) return true;
    for (int i = 1; i < argc; ++i)
        if (std::string(argv[i]) == section) return true;
    return false;
}

}  // namespace

// `bench [SECTION...]` runs only those sections; `bench` runs all of this stage's.
int main(int argc, char** argv) {
    const auto start = std::chrono::steady_clock::now();
    std::vector<bench::Section> sections = bench::sections();
    std::stable_sort(sections.begin(), sections.end(), [](const auto& a, const auto& b) {
        return a.forks != b.forks ? a.forks : a.lesson < b.lesson;
    });
    std::string names;
    for (const bench::Section& section : sections) names += std::string(" ") + section.name;
    std::printf("make bench on %s, %u cores; medians of %d repetitions; sections:%s\n",
                cpu_model().c_str(), std::thread::hardware_concurrency(), bench::kRepetitions,
                names.c_str());
    if (bench::operation_scale() != 1.0)
        std::printf("BENCH_SCALE=%g: operation counts scaled, the times are not comparable\n",
                    bench::operation_scale());
    std::fflush(stdout);
    std::vector<bench::Figure> figures;
    for (const bench::Section& section : sections)
        if (wanted(argc, argv, section.name)) section.measure(figures);
    print_table(figures);
    print_targets(figures);
    print_results(figures);
    const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
    std::printf("\nmake bench took %.0f s\n", took.count());
}
