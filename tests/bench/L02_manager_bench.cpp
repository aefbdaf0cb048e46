// L02_manager_bench.cpp — make bench, lesson 2: what the FiberManager adds to a raw switch, and
// what a blocked fiber costs in memory.
//
//   yield              two fibers yielding to each other: ns per yield (one switch)
//   yield_traced       the same with FIB_TRACE set (trace.hpp): two events per yield
//                      into the manager's buffer; written to /dev/null at exit
//   spawn_join         spawn + first run + join + release, stack from the pool
//   thread_spawn_join  the same spawn + join with std::thread, for contrast
//   fiber_rss          100,000 fibers blocked at once: growth of this process's
//                      RSS, divided by 100,000 (a fiber touches only the top of
//                      its stack)
//   rss_after_burst    once those 100,000 fibers have ended: what is left of that
//                      growth, in bytes (the pool keeps every stack, but only its
//                      warm ones keep their pages)
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>

#include "L02_blocked_fibers.hpp"
#include "bench.hpp"
#include "fib/fiber.hpp"

namespace bench {
namespace {

// Two fibers of `manager` yielding to each other.
Summary yields_on(fib::FiberManager& manager, long operations) {
    return ns_per_op(operations, [&manager](long count) {
        auto yielder = [&manager, count] {
            for (long i = 0; i < count / 2; ++i) manager.yield();
        };
        fib::Fiber a(yielder), b(yielder);
        a.join();
        b.join();
    });
}

Summary yield_each(long operations) {
    fib::FiberManager manager;
    return yields_on(manager, operations);
}

// Only this manager is traced: the variables are set around its creation.
// The buffer holds every event of the warm-up and the repetitions (about
// 1,000,000 for 100,000 yields), so none is dropped and every yield records.
Summary traced_yield_each(long operations) {
    setenv("FIB_TRACE", "/dev/null", 1);
    setenv("FIB_TRACE_EVENTS", "100000000", 1);
    fib::FiberManager manager;
    unsetenv("FIB_TRACE");
    unsetenv("FIB_TRACE_EVENTS");
    return yields_on(manager, operations);
}

Summary spawn_join_each(long operations) {
    fib::FiberManager manager;
    return ns_per_op(operations, [](long count) {
        for (long i = 0; i < count; ++i) fib::Fiber([] {}).join();
    });
}

Summary thread_spawn_join_each(long operations) {
    return ns_per_op(operations, [](long count) {
        for (long i = 0; i < count; ++i) std::thread([] {}).join();
    });
}

constexpr int kMemoryRepetitions = 5;
constexpr long kFibers = 100'000;

long count_lines(const char* path) {
    std::ifstream file(path);
    long lines = 0;
    for (std::string line; std::getline(file, line);) ++lines;
    return lines;
}

// One repetition, in a fresh manager so the stacks are new mappings: RSS per
// blocked fiber, and (in *left_after) the growth left once they have all ended.
double rss_per_blocked_fiber(long* mappings, double* left_after) {
    fib::FiberManager manager;
    const long before = resident_bytes();
    const long during = while_fibers_blocked(manager, kFibers, [mappings] {
        const long resident = resident_bytes();
        *mappings = count_lines("/proc/self/maps");
        return resident;
    });
    *left_after = static_cast<double>(resident_bytes() - before);
    return static_cast<double>(during - before) / kFibers;
}

void manager_costs(std::vector<Figure>& figures) {
    const Figure* raw = find(figures, "switch_context");
    const double raw_switch = raw ? raw->value.median : 0.0;
    Figure yield{"yield", yield_each(10'000'000)};
    Figure traced{"yield_traced", traced_yield_each(100'000)};
    Figure spawn{"spawn_join", spawn_join_each(2'000'000)};
    Figure thread{"thread_spawn_join", thread_spawn_join_each(20'000)};

    if (raw) compare(yield, "switch_context", "switch_context_ratio", yield.value.median / raw_switch);
    compare(traced, "yield", "yield_ratio", traced.value.median / yield.value.median);
    compare(spawn, "faster than thread_spawn_join", "thread_spawn_join_speedup",
            thread.value.median / spawn.value.median);

    std::vector<double> per_fiber, left_after;
    long mappings = 0;
    for (int i = 0; i < kMemoryRepetitions; ++i) {
        double left = 0;
        per_fiber.push_back(rss_per_blocked_fiber(&mappings, &left));
        left_after.push_back(left);
    }
    Figure fiber{"fiber_rss", summarize(per_fiber), "bytes"};
    fiber.repetitions = kMemoryRepetitions;
    fiber.compared = std::to_string(kFibers) + " fibers blocked at once; " + std::to_string(mappings) +
                     " kernel mappings in all";
    fiber.result_extra = " fibers=" + std::to_string(kFibers) + " mappings=" + std::to_string(mappings);
    Figure burst{"rss_after_burst", summarize(left_after), "bytes"};
    burst.repetitions = kMemoryRepetitions;
    burst.compared = "after those " + std::to_string(kFibers) + " fibers ended; " +
                     std::to_string(fib::StackPool::kWarm) + " warm stacks keep their pages";
    burst.result_extra = " fibers=" + std::to_string(kFibers);
    for (Figure* figure : {&yield, &traced, &spawn, &thread, &fiber, &burst}) figures.push_back(*figure);
}

[[maybe_unused]] const bool registered[] = {
    add(Section{"manager", 2, false, manager_costs}),
    add(Target{"yield / switch_context (<= 2)", "yield", "switch_context", false, 2}),
    add(Target{"spawn_join, ns (<= 100)", "spawn_join", nullptr, false, 100}),
};

}  // namespace
}  // namespace bench
