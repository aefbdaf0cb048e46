// L08_offload_bench.cpp — make bench, lesson 8: what awaiting work on a thread pool costs.
//
//   offload_roundtrip   a fiber offloads an empty callable and gets its result: the job
//                       queued and a worker woken (futex), the result posted home and the
//                       home thread woken (eventfd, epoll_wait), the fiber woken. ns per
//                       round trip
//   thread_roundtrip    two threads hand a token there and back through a futex (lesson 1's
//                       thread_pingpong, both ways), timed turn about with offload_roundtrip
//                       so that the machine's drift falls on both alike: the ratio the
//                       lesson's target is set on
//   async_roundtrip     std::async(std::launch::async, ...).get() from a plain thread: a
//                       thread made and joined per call, the usual way to "await" in C++
//   offload_throughput  1,000 fibers each offloading empty callables in a loop: offloads
//                       per second, the results coming home in batches
//   offload_idle_cpu    CPU time the whole process spends while a fiber awaits 200 ms of
//                       work that sleeps: microseconds of CPU per 200 ms (a loop and workers
//                       that spin on their queues would spend the whole 200 ms, per thread)

#include <chrono>
#include <future>
#include <thread>
#include <vector>

#include "L01_thread_pingpong.hpp"
#include "bench.hpp"
#include "fib/fiber.hpp"
#include "fib/offload.hpp"
#include "fib/waiter.hpp"

namespace bench {
namespace {

// offload_roundtrip and thread_roundtrip, timed turn about.
std::pair<Summary, Summary> offload_and_thread_round_trips(long operations) {
    fib::FiberManager manager;
    fib::Waiter waiter;
    fib::ThreadPool pool(1);
    ThreadPingpong threads;
    return ns_per_op_turn_about(
        operations,
        [&](long count) {
            long sum = 0;
            for (long i = 0; i < count; ++i) sum += fib::offload(pool, [i] { return i; });
            if (sum < 0) std::abort();
        },
        [&](long count) { threads.round_trips(count); });
}

Summary async_each(long operations) {
    return ns_per_op(operations, [](long count) {
        long sum = 0;
        for (long i = 0; i < count; ++i) sum += std::async(std::launch::async, [i] { return i; }).get();
        if (sum < 0) std::abort();
    });
}

constexpr int kFibers = 1000;

// ns per offload over kFibers fibers; turned into offloads per second below.
Summary offload_many(long operations) {
    fib::FiberManager manager;
    fib::Waiter waiter;
    fib::ThreadPool pool(1);
    return ns_per_op(operations, [&](long count) {
        std::vector<fib::Fiber> fibers;
        fibers.reserve(kFibers);
        for (int f = 0; f < kFibers; ++f)
            fibers.emplace_back([&pool, count] {
                for (long i = 0; i < count / kFibers + 1; ++i) fib::offload(pool, [] { return 0; });
            });
        for (fib::Fiber& fiber : fibers) fiber.join();
    });
}

// CPU microseconds the process spends while its fiber awaits 200 ms of sleeping work.
Summary idle_cpu() {
    fib::FiberManager manager;
    fib::Waiter waiter;
    fib::ThreadPool pool(2);
    std::vector<double> values;
    for (int i = 0; i < 5; ++i) {
        const double before = process_cpu_us();
        fib::offload(pool, [] {
            std::this_thread::sleep_for(std::chrono::milliseconds(200));
            return 0;
        });
        values.push_back(process_cpu_us() - before);
    }
    return summarize(values);
}

Summary per_second(Summary ns) { return {1e9 / ns.median, 1e9 / ns.max, 1e9 / ns.min}; }

void offload_costs(std::vector<Figure>& figures) {
    const auto [offload, threads] = offload_and_thread_round_trips(100'000);
    Figure roundtrip{"offload_roundtrip", offload};
    Figure thread_roundtrip{"thread_roundtrip", threads};
    compare(roundtrip, "a thread round trip (turn about)", "thread_roundtrip_ratio",
            offload.median / threads.median);
    Figure async{"async_roundtrip", async_each(5'000)};
    compare(async, "offload_roundtrip", "offload_ratio", async.value.median / roundtrip.value.median);
    const Summary many = offload_many(200'000);
    Figure throughput{"offload_throughput", per_second(many), "per_s"};
    throughput.compared = std::to_string(kFibers) + " fibers offloading at once, 1 worker";
    throughput.result_extra = " fibers=" + std::to_string(kFibers);
    Figure idle{"offload_idle_cpu", idle_cpu(), "us"};
    idle.compared = "CPU time over a 200 ms await, every thread of the process";
    idle.repetitions = 5;
    figures.push_back(roundtrip);
    figures.push_back(thread_roundtrip);
    figures.push_back(async);
    figures.push_back(throughput);
    figures.push_back(idle);
}

[[maybe_unused]] const bool registered[] = {
    add(Section{"offload", 8, false, offload_costs}),
    add(Target{"offload_roundtrip / thread_roundtrip (<= 1)", "offload_roundtrip", "thread_roundtrip",
               false, 1}),
};

}  // namespace
}  // namespace bench
