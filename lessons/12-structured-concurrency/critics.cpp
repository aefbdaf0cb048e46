// critics.cpp — lesson 12: the tickers, the fibers that block or spin among them, and the demo's lines.
#include "critics.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <thread>

#include "fib/fatal.hpp"
#include "fib/fiber.hpp"
#include "fib/offload.hpp"
#include "fib/timer.hpp"
#include "fib/unique_fd.hpp"

namespace critics {
namespace {

using Micros = std::chrono::duration<double, std::micro>;

// Where spin()'s results go, so the compiler must compute them.
volatile std::uint64_t spin_result = 1;

// The tickers run while `disturb` runs in a fiber of its own, and stop when
// it returns. Each ticker asks to wake `period` from now, and when it runs
// again records how late it is: a fiber that holds the thread (in a system
// call, in a loop) makes every ticker late until it lets go.
template <class Disturb>
Latency with_tickers(const Tickers& tickers, Disturb disturb) {
    bool done = false;
    std::vector<std::vector<double>> lateness_us(static_cast<std::size_t>(tickers.count));
    std::vector<fib::Fiber> ticker_fibers;
    for (std::vector<double>& samples : lateness_us)
        ticker_fibers.emplace_back(fib::FiberOptions{.name = "ticker"}, [&done, &samples, &tickers] {
            while (!done) {
                const fib::Clock::time_point deadline = fib::Clock::now() + tickers.period;
                fib::sleep_until(deadline);
                samples.push_back(Micros(fib::Clock::now() - deadline).count());
            }
        });
    fib::Fiber disturber({.name = "disturber"}, [&] {
        disturb();
        done = true;
    });
    disturber.join();
    for (fib::Fiber& ticker : ticker_fibers) ticker.join();
    std::vector<double> all;
    for (const std::vector<double>& samples : lateness_us) all.insert(all.end(), samples.begin(), samples.end());
    return latency_of(std::move(all));
}

// A pipe that answers late. ask_and_wait() writes a byte to the helper
// thread's request pipe, then reads the byte the helper writes back `delay`
// later, with a plain blocking ::read: the calling thread sleeps in the kernel
// meanwhile, as in a read from a slow disk or a DNS lookup.
class SlowPipe {
public:
    explicit SlowPipe(fib::Clock::duration delay) {
        request_read_ = pipe_end(request_write_);
        reply_read_ = pipe_end(reply_write_);
        helper_ = std::thread([this, delay] { answer_each(delay); });
    }
    // The helper reads end of file on its request pipe, and ends.
    ~SlowPipe() {
        request_write_.reset();
        helper_.join();
    }
    SlowPipe(const SlowPipe&) = delete;
    SlowPipe& operator=(const SlowPipe&) = delete;

    void ask_and_wait() {
        char byte = 'q';
        if (::write(request_write_.get(), &byte, 1) != 1) fib::fatal("SlowPipe: write: errno %d", errno);
        if (::read(reply_read_.get(), &byte, 1) != 1) fib::fatal("SlowPipe: read: errno %d", errno);
    }

private:
    // A blocking pipe; returns its read end, and gives its write end to `write_end`.
    static fib::UniqueFd pipe_end(fib::UniqueFd& write_end) {
        int ends[2];
        if (::pipe2(ends, O_CLOEXEC) != 0) fib::fatal("SlowPipe: pipe2: errno %d", errno);
        write_end.reset(ends[1]);
        return fib::UniqueFd(ends[0]);
    }

    void answer_each(fib::Clock::duration delay) {
        char byte;
        while (::read(request_read_.get(), &byte, 1) == 1) {
            std::this_thread::sleep_for(delay);
            if (::write(reply_write_.get(), &byte, 1) != 1) fib::fatal("SlowPipe: helper write: errno %d", errno);
        }
    }

    fib::UniqueFd request_read_, request_write_, reply_read_, reply_write_;
    std::thread helper_;
};

// The work with a yield after every `every` iterations, each yield's time
// added to `yield_ns`; returns spin()'s result.
std::uint64_t spin_yielding(long iterations, long every, std::uint64_t state, std::vector<double>& yield_ns) {
    for (long left = iterations; left > 0; left -= every) {
        state = spin(std::min(left, every), state);
        const fib::Clock::time_point before = fib::Clock::now();
        fib::this_fiber::yield();
        yield_ns.push_back(std::chrono::duration<double, std::nano>(fib::Clock::now() - before).count());
    }
    return state;
}

double median_of(std::vector<double> values) {
    std::sort(values.begin(), values.end());
    return percentile(values, 50);
}

double ms(double us) { return us / 1000; }
long whole_ms(fib::Clock::duration duration) {
    return static_cast<long>(std::chrono::duration_cast<std::chrono::milliseconds>(duration).count());
}

void print_columns() { std::printf("  %-44s %6s %6s %6s\n", "", "p50", "p99", "max"); }

void print_latency(const char* what, const Latency& latency) {
    std::printf("  %-44s %6.2f %6.2f %6.2f ms\n", what, ms(latency.p50_us), ms(latency.p99_us),
                ms(latency.max_us));
}

}  // namespace

Latency measure_pinning(Blocker blocker, const PinningSetup& setup, fib::ThreadPool& pool) {
    SlowPipe pipe(setup.block);
    const auto block_us = std::chrono::duration_cast<std::chrono::microseconds>(setup.block).count();
    return with_tickers(setup.tickers, [&] {
        for (int cycle = 0; cycle < setup.cycles; ++cycle) {
            fib::sleep_for(setup.gap);
            switch (blocker) {
            case Blocker::kNone: fib::sleep_for(setup.block); break;
            case Blocker::kReadInFiber: pipe.ask_and_wait(); break;
            case Blocker::kSleepInFiber: ::usleep(static_cast<useconds_t>(block_us)); break;
            case Blocker::kReadOffloaded: fib::offload(pool, [&pipe] { pipe.ask_and_wait(); }); break;
            }
        }
    });
}

StarvationRun measure_starvation(Work work, const StarvationSetup& setup, fib::ThreadPool& pool) {
    StarvationRun run;
    std::vector<double> bursts_us, yield_ns;
    run.latency = with_tickers(setup.tickers, [&] {
        for (int cycle = 0; cycle < setup.cycles; ++cycle) {
            fib::sleep_for(setup.gap);
            const std::uint64_t seed = spin_result;
            const fib::Clock::time_point start = fib::Clock::now();
            switch (work) {
            case Work::kNone: fib::sleep_for(setup.burst); break;
            case Work::kNoYield: spin_result = spin(setup.iterations, seed); break;
            case Work::kYieldEvery:
                spin_result = spin_yielding(setup.iterations, setup.yield_every, seed, yield_ns);
                break;
            case Work::kOffloaded:
                spin_result = fib::offload(pool, [&setup, seed] { return spin(setup.iterations, seed); });
                break;
            }
            bursts_us.push_back(Micros(fib::Clock::now() - start).count());
        }
    });
    run.burst_us = median_of(std::move(bursts_us));
    run.yields = static_cast<long>(yield_ns.size()) / setup.cycles;
    if (!yield_ns.empty()) run.yield_ns = median_of(std::move(yield_ns));
    return run;
}

std::uint64_t spin(long iterations, std::uint64_t state) {
    for (long i = 0; i < iterations; ++i) {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
    }
    return state;
}

long spin_iterations_in(fib::Clock::duration duration) {
    constexpr long kTrial = 1'000'000;
    double best_us = 1e300;
    for (int trial = 0; trial < 3; ++trial) {
        const fib::Clock::time_point start = fib::Clock::now();
        spin_result = spin(kTrial, spin_result);
        best_us = std::min(best_us, Micros(fib::Clock::now() - start).count());
    }
    return static_cast<long>(static_cast<double>(kTrial) * Micros(duration).count() / best_us) + 1;
}

void demo_pinning() {
    fib::ThreadPool pool(1);
    const PinningSetup setup;
    std::printf("Pinning: %d ticker fibers each wake every %ld ms; another fiber, %d times, sleeps %ld ms\n"
                "then takes %ld ms in one of these ways. How late the tickers woke:\n",
                setup.tickers.count, whole_ms(setup.tickers.period), setup.cycles, whole_ms(setup.gap),
                whole_ms(setup.block));
    print_columns();
    print_latency("it waits in fib::sleep_for (baseline)", measure_pinning(Blocker::kNone, setup, pool));
    print_latency("it blocks in read() of a slow pipe", measure_pinning(Blocker::kReadInFiber, setup, pool));
    print_latency("it blocks in usleep()", measure_pinning(Blocker::kSleepInFiber, setup, pool));
    print_latency("its read() runs on a pool (fib::offload)", measure_pinning(Blocker::kReadOffloaded, setup, pool));
    std::printf("  a system call in a fiber holds the whole thread; offloaded, only its fiber waits\n");
}

void demo_starvation() {
    fib::ThreadPool pool(1);
    StarvationSetup setup;
    setup.iterations = spin_iterations_in(setup.burst);
    setup.yield_every = spin_iterations_in(50us);
    std::printf("Starvation: %d ticker fibers each wake every %ld ms; another fiber, %d times, sleeps %ld ms\n"
                "then computes %ld ms (%ld iterations). How late the tickers woke:\n",
                setup.tickers.count, whole_ms(setup.tickers.period), setup.cycles, whole_ms(setup.gap),
                whole_ms(setup.burst), setup.iterations);
    print_columns();
    print_latency("it sleeps instead (baseline)", measure_starvation(Work::kNone, setup, pool).latency);
    const StarvationRun alone = measure_starvation(Work::kNoYield, setup, pool);
    print_latency("it computes without yielding", alone.latency);
    const StarvationRun yielding = measure_starvation(Work::kYieldEvery, setup, pool);
    char what[64];
    std::snprintf(what, sizeof what, "it yields every %ld iterations", setup.yield_every);
    print_latency(what, yielding.latency);
    print_latency("it computes on a pool (fib::offload)", measure_starvation(Work::kOffloaded, setup, pool).latency);
    std::printf("  a burst took %.2f ms of wall time alone, %.2f ms with its %ld yields; a yield took %.0f ns\n",
                ms(alone.burst_us), ms(yielding.burst_us), yielding.yields, yielding.yield_ns);
}

}  // namespace critics
