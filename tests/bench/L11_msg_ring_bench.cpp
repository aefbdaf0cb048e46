// L11_msg_ring_bench.cpp — make bench, lesson 11: a cross-thread Event round trip, eventfd wakes vs MSG_RING wakes.
//
//   msg_ring_pingpong_uring      two threads, each a FiberManager and a "uring"
//                             Waiter, bounce an Event set back and forth: a
//                             fiber of each waits on its own thread's Event
//                             and sets the other's; ns per round trip (two
//                             cross-thread sets, each an eventfd write that
//                             fires the owner's POLL_ADD)
//   msg_ring_pingpong_msg        the same on "uring-msg": each set is an
//                             IORING_OP_MSG_RING message into the owner's ring
// The two rungs take turns within each repetition (the first rotating); the
// msg row's ratio to the uring row is the median of the per-repetition ratios.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "bench.hpp"
#include "fib/event.hpp"
#include "fib/fiber.hpp"
#include "fib/waiter.hpp"

namespace bench {
namespace {

constexpr long kRoundTrips = 10'000;  // per repetition and rung

struct Rung {
    const char* backend;
    const char* row;
};
constexpr Rung kRungs[] = {{"uring", "msg_ring_pingpong_uring"}, {"uring-msg", "msg_ring_pingpong_msg"}};
constexpr std::size_t kRungCount = sizeof kRungs / sizeof kRungs[0];

// `warm_up` untimed round trips, then `count` timed ones: ns per round trip.
// The Poller's name goes to `poller` (a rung the kernel refused says so).
double cross_thread_pingpong(const char* backend, long warm_up, long count, std::string& poller) {
    fib::FiberManager manager;
    fib::Waiter waiter(backend);
    poller = waiter.poller().name();
    fib::Event pong;  // this thread's
    std::promise<fib::Event*> made;
    std::thread ponger([&] {
        fib::FiberManager own_manager;
        fib::Waiter own(backend);
        fib::Event ping;  // the ponger's
        made.set_value(&ping);
        fib::Fiber([&] {
            for (long i = 0; i < warm_up + count; ++i) {
                ping.wait();
                pong.set();
            }
        }).join();
    });
    fib::Event& ping = *made.get_future().get();
    std::chrono::steady_clock::time_point start;
    fib::Fiber([&] {
        for (long i = 0; i < warm_up + count; ++i) {
            if (i == warm_up) start = std::chrono::steady_clock::now();
            ping.set();
            pong.wait();
        }
    }).join();
    const std::chrono::duration<double, std::nano> elapsed = std::chrono::steady_clock::now() - start;
    ponger.join();
    return elapsed.count() / static_cast<double>(count);
}

void msg_ring_costs(std::vector<Figure>& figures) {
    long count = kRoundTrips;
    if (operation_scale() != 1.0) count = static_cast<long>(static_cast<double>(count) * operation_scale()) + 2;
    std::vector<double> ns[kRungCount], ratios;
    std::string poller[kRungCount];
    for (int repetition = 0; repetition < kRepetitions; ++repetition) {
        double trip_ns[kRungCount];
        for (std::size_t turn = 0; turn < kRungCount; ++turn) {
            const std::size_t rung = (turn + static_cast<std::size_t>(repetition)) % kRungCount;
            trip_ns[rung] = cross_thread_pingpong(kRungs[rung].backend, count / 10 + 1, count, poller[rung]);
            ns[rung].push_back(trip_ns[rung]);
        }
        ratios.push_back(trip_ns[1] / trip_ns[0]);
    }
    for (std::size_t rung = 0; rung < kRungCount; ++rung) {
        Figure figure{kRungs[rung].row, summarize(ns[rung])};
        figure.compared = std::string("--backend ") + kRungs[rung].backend;
        if (poller[rung] != kRungs[rung].backend) figure.compared += " (fell back to " + poller[rung] + ")";
        figure.result_extra = std::string(" backend=") + kRungs[rung].backend + " poller=" + poller[rung];
        if (rung != 0) {
            const Summary ratio = summarize(ratios);
            compare(figure, "uring", "uring_ratio", ratio.median);
            char text[96];
            std::snprintf(text, sizeof text, " uring_ratio_min=%.2f uring_ratio_max=%.2f", ratio.min, ratio.max);
            figure.result_extra += text;
        }
        figures.push_back(figure);
    }
}

[[maybe_unused]] const bool registered = add(Section{"msg-ring", 11, false, msg_ring_costs});

}  // namespace
}  // namespace bench
