// post_trips.cpp — lesson 9: post round trips between two managers, to count what one costs.
//
//   build/lesson9/post_trips [N]           (N round trips, default 20,000)
//   strace -f -c build/lesson9/post_trips 20000
//
// A fiber on thread 0 of a two-thread Cluster posts a callable to thread 1,
// which posts one back that sets the fiber's Event, N times over, and prints
// the time per round trip. Under strace -f -c (which slows every system call,
// so read its counts, not the time) the table divided by N is what one round
// trip asks of the kernel: README.md's Measured section says where each call
// comes from.
#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "fib/cluster.hpp"
#include "fib/event.hpp"

int main(int argc, char** argv) {
    const long trips = argc > 1 ? std::atol(argv[1]) : 20000;
    if (trips <= 0) {
        std::fprintf(stderr, "usage: post_trips [N]   (N > 0 round trips)\n");
        return 2;
    }
    fib::Cluster cluster({.threads = 2});
    std::chrono::duration<double, std::micro> took{};
    // Thread 1's main returns at once; the thread serves posts until stop(),
    // which run() makes once thread 0's main has returned too.
    cluster.run([&](std::size_t index) {
        if (index != 0) return;
        fib::Event back;  // thread 0's: the callable posted back sets it there
        const auto start = std::chrono::steady_clock::now();
        for (long i = 0; i < trips; ++i) {
            cluster.post(1, [&] { cluster.post(0, [&] { back.set(); }); });
            back.wait();
        }
        took = std::chrono::steady_clock::now() - start;
    });
    std::printf("%ld post round trips, %.1f us each\n", trips, took.count() / trips);
}
