// L11_uring.cpp — make bench, lesson 11: one round trip between two fibers on each rung of the ablation.
//
//   uring_pingpong_epoll   two fibers of one thread bounce 64 bytes back and
//                          forth over a socketpair with fib::io::write_all and
//                          fib::io::read, on lesson 5's epoll: ns per round trip
//                          (two writes, two reads, two parks)
//   uring_pingpong_poll    the same on "uring-poll": the ring only as a poller
//   uring_pingpong_ops     "uring-ops": each read and write an operation, one
//                          io_uring_enter each
//   uring_pingpong_batch   "uring-batch": the operations wait for the
//                          Waiter's one enter per turn
//   uring_pingpong_uring   "uring": that with SINGLE_ISSUER and DEFER_TASKRUN
// The rungs take turns within each repetition (the first one rotating), so a
// machine that drifts moves them all alike; each rung's ratio to epoll is the
// median of the per-repetition ratios. The uring rows also give the ring's
// io_uring_enter calls per round trip. A rung whose ring the kernel refused
// runs on epoll (it says so on stderr) and its row says so.
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "bench.hpp"
#include "fib/fiber.hpp"
#include "fib/io.hpp"
#include "fib/uring_poller.hpp"
#include "fib/waiter.hpp"

namespace bench {
namespace {

constexpr std::size_t kMessage = 64;
constexpr long kRoundTrips = 6'000;  // per repetition and rung

struct Rung {
    const char* backend;
    const char* row;
};
constexpr Rung kRungs[] = {
    {"epoll", "uring_pingpong_epoll"},       {"uring-poll", "uring_pingpong_poll"},
    {"uring-ops", "uring_pingpong_ops"},     {"uring-batch", "uring_pingpong_batch"},
    {"uring", "uring_pingpong_uring"},
};
constexpr std::size_t kRungCount = sizeof kRungs / sizeof kRungs[0];

struct Trips {
    double ns_per_trip = 0;
    double enters_per_trip = -1;  // -1: no ring
    std::string poller;           // the Poller the Waiter got
};

void read_exactly(int fd, char* buffer) {
    std::size_t got = 0;
    while (got < kMessage) {
        const ssize_t n = fib::io::read(fd, buffer + got, kMessage - got);
        if (n <= 0) {
            std::fprintf(stderr, "uring_pingpong: read returned %zd\n", n);
            std::abort();
        }
        got += static_cast<std::size_t>(n);
    }
}

void write_exactly(int fd, const char* buffer) {
    if (fib::io::write_all(fd, buffer, kMessage) != static_cast<ssize_t>(kMessage)) {
        std::fprintf(stderr, "uring_pingpong: write_all failed\n");
        std::abort();
    }
}

// `count` round trips: the pinger writes 64 bytes into one end, the ponger
// reads them from the other and writes them back.
void bounce(int pinger_fd, int ponger_fd, long count) {
    fib::Fiber ponger({.name = "ponger"}, [&] {
        char buffer[kMessage];
        for (long i = 0; i < count; ++i) {
            read_exactly(ponger_fd, buffer);
            write_exactly(ponger_fd, buffer);
        }
    });
    fib::Fiber pinger({.name = "pinger"}, [&] {
        char buffer[kMessage] = {};
        for (long i = 0; i < count; ++i) {
            buffer[0] = static_cast<char>(i);
            write_exactly(pinger_fd, buffer);
            read_exactly(pinger_fd, buffer);
            if (buffer[0] != static_cast<char>(i)) {
                std::fprintf(stderr, "uring_pingpong: round trip %ld came back wrong\n", i);
                std::abort();
            }
        }
    });
    pinger.join();
    ponger.join();
}

// One repetition on one rung, with a FiberManager and a Waiter of its own.
Trips pingpong(const char* backend, long count) {
    fib::FiberManager manager;
    fib::Waiter waiter(backend);
    int pair[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, pair) < 0) {
        std::perror("uring_pingpong: socketpair");
        std::abort();
    }
    const auto* ring = dynamic_cast<const fib::UringPoller*>(&waiter.poller());
    bounce(pair[0], pair[1], count / 10 + 1);  // warm-up, untimed
    const fib::RingStats before = ring ? ring->ring().stats() : fib::RingStats{};
    const auto start = std::chrono::steady_clock::now();
    bounce(pair[0], pair[1], count);
    const std::chrono::duration<double, std::nano> elapsed = std::chrono::steady_clock::now() - start;
    Trips trips;
    trips.ns_per_trip = elapsed.count() / static_cast<double>(count);
    trips.poller = waiter.poller().name();
    if (ring)
        trips.enters_per_trip =
            static_cast<double>(ring->ring().stats().enters - before.enters) / static_cast<double>(count);
    fib::io::close(pair[0]);
    fib::io::close(pair[1]);
    return trips;
}

void ring_costs(std::vector<Figure>& figures) {
    long count = kRoundTrips;
    if (operation_scale() != 1.0) count = static_cast<long>(static_cast<double>(count) * operation_scale()) + 2;
    std::vector<double> ns[kRungCount], ratios[kRungCount], enters[kRungCount];
    std::string poller[kRungCount];
    for (int repetition = 0; repetition < kRepetitions; ++repetition) {
        double trip_ns[kRungCount];
        for (std::size_t turn = 0; turn < kRungCount; ++turn) {
            const std::size_t rung = (turn + static_cast<std::size_t>(repetition)) % kRungCount;
            const Trips trips = pingpong(kRungs[rung].backend, count);
            trip_ns[rung] = trips.ns_per_trip;
            ns[rung].push_back(trips.ns_per_trip);
            if (trips.enters_per_trip >= 0) enters[rung].push_back(trips.enters_per_trip);
            poller[rung] = trips.poller;
        }
        for (std::size_t rung = 0; rung < kRungCount; ++rung) ratios[rung].push_back(trip_ns[rung] / trip_ns[0]);
    }
    for (std::size_t rung = 0; rung < kRungCount; ++rung) {
        Figure figure{kRungs[rung].row, summarize(ns[rung])};
        figure.compared = std::string("--backend ") + kRungs[rung].backend;
        if (poller[rung] != kRungs[rung].backend) figure.compared += " (fell back to " + poller[rung] + ")";
        figure.result_extra = std::string(" backend=") + kRungs[rung].backend + " poller=" + poller[rung];
        if (!enters[rung].empty()) {
            const Summary per_trip = summarize(enters[rung]);
            char text[96];
            std::snprintf(text, sizeof text, "; %.2f enters/trip", per_trip.median);
            figure.compared += text;
            std::snprintf(text, sizeof text, " enters_per_round_trip=%.3f", per_trip.median);
            figure.result_extra += text;
        }
        if (rung != 0) {
            const Summary ratio = summarize(ratios[rung]);
            compare(figure, "epoll", "epoll_ratio", ratio.median);
            char text[96];
            std::snprintf(text, sizeof text, " epoll_ratio_min=%.2f epoll_ratio_max=%.2f", ratio.min, ratio.max);
            figure.result_extra += text;
        }
        figures.push_back(figure);
    }
}

[[maybe_unused]] const bool registered = add(Section{"uring", 11, false, ring_costs});

}  // namespace
}  // namespace bench
