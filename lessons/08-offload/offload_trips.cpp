// offload_trips.cpp — lesson 8: offload round trips one at a time, to count what one costs.
//
//   build/lesson8/offload_trips [N]        (N round trips, default 20,000)
//   strace -f -c build/lesson8/offload_trips 20000
//
// A fiber offloads an empty callable to a pool of one worker and waits for its
// result, N times over, and prints the time per round trip. Under strace -f -c
// (which slows every system call, so read its counts, not the time) the table
// divided by N is what one round trip asks of the kernel: README.md's Measured
// section compares it with two threads handing a token back and forth.
#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "fib/fiber_manager.hpp"
#include "fib/offload.hpp"
#include "fib/waiter.hpp"

int main(int argc, char** argv) {
    const long trips = argc > 1 ? std::atol(argv[1]) : 20000;
    if (trips <= 0) {
        std::fprintf(stderr, "usage: offload_trips [N]   (N > 0 round trips)\n");
        return 2;
    }
    fib::FiberManager manager;
    fib::Waiter waiter;
    fib::ThreadPool pool(1);
    long sum = 0;
    const auto start = std::chrono::steady_clock::now();
    for (long i = 0; i < trips; ++i) sum += fib::offload(pool, [i] { return i; });
    const std::chrono::duration<double, std::micro> took = std::chrono::steady_clock::now() - start;
    if (sum != trips * (trips - 1) / 2) std::abort();
    std::printf("%ld offload round trips, %.1f us each\n", trips, took.count() / trips);
}
