// L12_critics_bench.cpp — make bench, lesson 12: what one blocking or busy fiber costs the others of its thread.
//
// The runs of lessons/12-structured-concurrency/critics.hpp: 8 ticker fibers
// each ask to wake every 1 ms, and record how late they wake; another fiber,
// 4 times, sleeps 20 ms, then disturbs them for 20 ms. Microseconds late, the
// p50, p99 and max of all the wakes of one run; each next to the same
// figure of the run without a disturbance (none), measured in the same run.
//
//   pinning_none_*            it waits 20 ms in fib::sleep_for: the baseline
//   pinning_read_*            it blocks in ::read of a pipe that a helper thread
//                             answers after 20 ms: the thread sleeps in the kernel
//   pinning_usleep_*          it blocks in ::usleep(20 ms)
//   pinning_read_offload_*    its read runs on a pool's worker (fib::offload);
//                             the result's wake-up between two ticks costs the
//                             tickers up to 1 ms (the Waiter's timeouts are
//                             whole milliseconds, see critics.hpp)
//
//   starvation_none_*         it sleeps for as long as the work takes: the baseline
//   starvation_spin_*         it runs 20 ms of a tight loop without yielding
//   starvation_spin_yield_*   the same loop, with fib::this_fiber::yield() every
//                             50 us of it (N iterations: see the yield_cost row);
//                             its p99 and max are the kernel's time slices when
//                             other processes want the core
//   starvation_spin_offload_* the loop runs on a pool's worker (fib::offload),
//                             which needs a core of its own
//   starvation_spin_burst     the wall time of one burst without yields, us: 20 ms
//                             of work on a core of its own, more on a shared one
//   starvation_yield_cost     ns from a yield() to the loop running again (the
//                             median): two switches and the Waiter's turn

#include <algorithm>
#include <string>
#include <vector>

#include "../../lessons/12-structured-concurrency/critics.hpp"
#include "bench.hpp"
#include "fib/fiber.hpp"
#include "fib/waiter.hpp"

namespace bench {
namespace {

using namespace std::chrono_literals;

// One case's latencies, a value per repetition.
struct Runs {
    std::vector<double> p50, p99, max;
    void add(const critics::Latency& latency) {
        p50.push_back(latency.p50_us);
        p99.push_back(latency.p99_us);
        max.push_back(latency.max_us);
    }
};

// BENCH_SCALE below 1 (CI) shortens a run to fewer disturbances.
int scaled_cycles(int cycles) {
    return std::max(1, static_cast<int>(cycles * std::min(1.0, operation_scale())));
}

// Three rows, p50, p99 and max, each compared with the baseline's (none when this is it).
void add_latency_rows(std::vector<Figure>& figures, const std::string& name, const Runs& runs,
                      const Runs* baseline, const std::string& what) {
    const std::pair<const char*, const std::vector<double> Runs::*> stats[] = {
        {"p50", &Runs::p50}, {"p99", &Runs::p99}, {"max", &Runs::max}};
    for (const auto& [stat, values] : stats) {
        Figure figure{name + "_" + stat, summarize(runs.*values), "us"};
        if (baseline)
            compare(figure, "baseline", "baseline_ratio",
                    figure.value.median / summarize(baseline->*values).median);
        else
            figure.compared = what;
        figures.push_back(figure);
    }
}

void pinning(std::vector<Figure>& figures) {
    fib::FiberManager manager;
    fib::Waiter waiter;
    fib::ThreadPool pool(1);
    critics::PinningSetup setup;
    setup.cycles = scaled_cycles(setup.cycles);
    using critics::Blocker;
    const Blocker blockers[] = {Blocker::kNone, Blocker::kReadInFiber, Blocker::kSleepInFiber,
                                Blocker::kReadOffloaded};
    const char* const names[] = {"pinning_none", "pinning_read", "pinning_usleep", "pinning_read_offload"};
    critics::measure_pinning(Blocker::kNone, setup, pool);  // warm-up: stacks, the Waiter's fiber
    // The cases take turns in each repetition, so a drift of the machine hits them all.
    Runs runs[std::size(blockers)];
    for (int repetition = 0; repetition < kRepetitions; ++repetition)
        for (std::size_t i = 0; i < std::size(blockers); ++i)
            runs[i].add(critics::measure_pinning(blockers[i], setup, pool));
    for (std::size_t i = 0; i < std::size(blockers); ++i)
        add_latency_rows(figures, names[i], runs[i], i == 0 ? nullptr : &runs[0],
                         "8 fibers waking every 1 ms, us late");
}

void starvation(std::vector<Figure>& figures) {
    fib::FiberManager manager;
    fib::Waiter waiter;
    fib::ThreadPool pool(1);
    critics::StarvationSetup setup;
    setup.cycles = scaled_cycles(setup.cycles);
    setup.iterations = critics::spin_iterations_in(setup.burst);
    setup.yield_every = critics::spin_iterations_in(50us);
    using critics::Work;
    const Work works[] = {Work::kNone, Work::kNoYield, Work::kYieldEvery, Work::kOffloaded};
    const char* const names[] = {"starvation_none", "starvation_spin", "starvation_spin_yield",
                                 "starvation_spin_offload"};
    critics::measure_starvation(Work::kNone, setup, pool);  // warm-up
    Runs runs[std::size(works)];
    std::vector<double> burst_us, yield_ns;
    for (int repetition = 0; repetition < kRepetitions; ++repetition) {
        for (std::size_t i = 0; i < std::size(works); ++i) {
            const critics::StarvationRun run = critics::measure_starvation(works[i], setup, pool);
            runs[i].add(run.latency);
            if (works[i] == Work::kNoYield) burst_us.push_back(run.burst_us);
            if (works[i] == Work::kYieldEvery) yield_ns.push_back(run.yield_ns);
        }
    }
    for (std::size_t i = 0; i < std::size(works); ++i)
        add_latency_rows(figures, names[i], runs[i], i == 0 ? nullptr : &runs[0],
                         "8 fibers waking every 1 ms, us late");
    Figure burst{"starvation_spin_burst", summarize(burst_us), "us"};
    burst.compared = "wall time of 20 ms of work (" + std::to_string(setup.iterations) + " iterations)";
    burst.result_extra = " iterations=" + std::to_string(setup.iterations);
    Figure cost{"starvation_yield_cost", summarize(yield_ns)};
    cost.compared = "one yield, every N=" + std::to_string(setup.yield_every) + " iterations (50 us)";
    cost.result_extra = " yield_every=" + std::to_string(setup.yield_every);
    figures.push_back(burst);
    figures.push_back(cost);
}

[[maybe_unused]] const bool registered_pinning = add(Section{"pinning", 12, false, pinning});
[[maybe_unused]] const bool registered_starvation = add(Section{"starvation", 12, false, starvation});

}  // namespace
}  // namespace bench
