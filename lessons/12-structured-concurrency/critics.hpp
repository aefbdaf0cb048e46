// critics.hpp — lesson 12: two critics of fibers, measured: a blocking call pins the thread, a busy fiber starves it.
//
// Fibers share their thread, and only switch where a fiber waits through the
// library or yields. Their critics say what follows (Java's virtual threads
// call it "pinning", JEP 444 and JEP 491; Gor Nishanov's WG21 paper P1364,
// "Fibers under the magnifying glass"): one fiber that blocks in a system
// call, or computes for long without yielding, stalls every other fiber of
// its thread. These functions put a number on it.
//
// Some "ticker" fibers each ask to wake every `period` (fib::sleep_until) and
// record how late each wake is: the latency every other fiber of the thread
// sees. One more fiber disturbs them, `cycles` times: it sleeps `gap` (a
// fiber's wait: the tickers run), then does something that takes `block`:
//
//   Blocker::kNone            fib::sleep_for(block): the baseline
//   Blocker::kReadInFiber     ::read of a pipe that a helper thread answers
//                             after `block`: the whole thread sleeps in the kernel
//   Blocker::kSleepInFiber    ::usleep(block): the same, without the pipe
//   Blocker::kReadOffloaded   the same ::read, run by fib::offload on a pool's
//                             worker: only the disturbing fiber waits
//
//   Work::kNone               fib::sleep_for(the burst's time): the baseline
//   Work::kNoYield            a tight loop of `iterations` (spin())
//   Work::kYieldEvery         the same loop, with fib::this_fiber::yield()
//                             every `yield_every` iterations
//   Work::kOffloaded          the same loop, run by fib::offload
//
// What the numbers show. About one wake in 20 of each ticker's follows a
// disturbance (20 ms of it every 40 ms, a tick every 1 ms), so a run's p99
// shows it and its p50 does not. The Waiter's timeouts are whole
// milliseconds (TimerHeap::timeout_ms rounds up): a ticker that sleeps 1 ms
// from a wake is on time, but when something else wakes the thread between
// two ticks (an offloaded result's eventfd), the rest of the wait is rounded
// up to a whole millisecond, and the tickers wake up to that much late. And a
// thread that computes (kNoYield, kYieldEvery) is the one the kernel takes
// its core from when the machine is busy, for a time slice of milliseconds;
// yielding among fibers does nothing about that.
//
// Every function here runs on the calling thread's FiberManager and Waiter,
// which must exist (create them in main, as every program of the course
// does); the measure_ functions are called from a fiber (main's is one).
#pragma once

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "fib/thread_pool.hpp"
#include "fib/timer_heap.hpp"

namespace critics {

using namespace std::chrono_literals;

// How late the tickers woke, in microseconds past the deadline they asked for.
struct Latency {
    double p50_us = 0, p99_us = 0, max_us = 0;
    std::size_t wakes = 0;
};

// The nearest-rank percentile: the smallest value that has at least `percent`
// percent of the values at or below it. `sorted` is ascending and not empty;
// `percent` is 1 to 100. Integer arithmetic: 99 percent of 100 values is the
// 99th, never the 100th by a rounding error.
inline double percentile(const std::vector<double>& sorted, int percent) {
    const std::size_t rank = (static_cast<std::size_t>(percent) * sorted.size() + 99) / 100;
    return sorted[std::max<std::size_t>(rank, 1) - 1];
}

// p50, p99 and max of the lateness values (all zero when there are none).
inline Latency latency_of(std::vector<double> lateness_us) {
    if (lateness_us.empty()) return {};
    std::sort(lateness_us.begin(), lateness_us.end());
    return {percentile(lateness_us, 50), percentile(lateness_us, 99), lateness_us.back(),
            lateness_us.size()};
}

struct Tickers {
    int count = 8;
    fib::Clock::duration period = 1ms;  // each ticker's sleep
};

enum class Blocker { kNone, kReadInFiber, kSleepInFiber, kReadOffloaded };

struct PinningSetup {
    Tickers tickers;
    fib::Clock::duration block = 20ms;  // each blocking call
    fib::Clock::duration gap = 20ms;    // the disturbing fiber's sleep before each
    int cycles = 4;
};

// One run: the tickers, disturbed by `blocker`; `pool` runs kReadOffloaded's read.
Latency measure_pinning(Blocker blocker, const PinningSetup& setup, fib::ThreadPool& pool);

enum class Work { kNone, kNoYield, kYieldEvery, kOffloaded };

struct StarvationSetup {
    Tickers tickers;
    fib::Clock::duration burst = 20ms;  // one burst of work; kNone sleeps this long
    long iterations = 0;   // of spin() that take `burst` (spin_iterations_in(burst))
    long yield_every = 0;  // kYieldEvery: iterations between two yields
    fib::Clock::duration gap = 20ms;
    int cycles = 4;
};

struct StarvationRun {
    Latency latency;
    double burst_us = 0;   // wall time of one burst, the median of the cycles'
    long yields = 0;       // in one burst
    // kYieldEvery: the median time a yield() took until this fiber ran again,
    // in ns: two switches and the turns of whoever was ready (the Waiter's fiber
    // at least, which looks at the timers), or a time slice the kernel gave
    // another process.
    double yield_ns = 0;
};

// One run: the tickers, disturbed by `work`; `pool` runs kOffloaded's loop.
StarvationRun measure_starvation(Work work, const StarvationSetup& setup, fib::ThreadPool& pool);

// The CPU-bound work: `iterations` steps of a xorshift generator from `state`,
// each depending on the last, so the compiler can neither skip nor vectorise it.
std::uint64_t spin(long iterations, std::uint64_t state);
// How many iterations of spin() take `duration` on this machine (the best of a few tries).
long spin_iterations_in(fib::Clock::duration duration);

// The lesson's demo: one run of each case, printed in a few readable lines.
void demo_pinning();
void demo_starvation();

}  // namespace critics
