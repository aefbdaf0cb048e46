// manager_bench.cpp — make bench, lessons 2-3: what the FiberManager adds to a raw switch.
//
//   yield              two fibers yielding to each other: ns per yield (one switch)
//   spawn_join         spawn + first run + join + release, stack from the pool
//   condvar_pingpong   two fibers handing a turn back and forth through CondVars:
//                      ns per one-way hand-off (a notify, a wait, a switch)
//   thread_spawn_join  the same spawn + join with std::thread, for contrast
#include <thread>

#include "bench.hpp"
#include "fib/condvar.hpp"
#include "fib/fiber.hpp"

namespace bench {
namespace {

Summary yield_each(long operations) {
    fib::FiberManager manager;
    return ns_per_op(operations, [&manager](long count) {
        auto yielder = [&manager, count] {
            for (long i = 0; i < count / 2; ++i) manager.yield();
        };
        fib::Fiber a(yielder), b(yielder);
        a.join();
        b.join();
    });
}

Summary spawn_join_each(long operations) {
    fib::FiberManager manager;
    return ns_per_op(operations, [](long count) {
        for (long i = 0; i < count; ++i) fib::Fiber([] {}).join();
    });
}

// `turn` says whose turn it is; each side waits on its own CondVar.
Summary condvar_handoff(long operations) {
    fib::FiberManager manager;
    return ns_per_op(operations, [](long count) {
        fib::CondVar ping_turn, pong_turn;
        bool ping_to_move = true;
        fib::Fiber ping([&] {
            for (long i = 0; i < count / 2; ++i) {
                while (!ping_to_move) ping_turn.wait();
                ping_to_move = false;
                pong_turn.notify_one();
            }
        });
        fib::Fiber pong([&] {
            for (long i = 0; i < count / 2; ++i) {
                while (ping_to_move) pong_turn.wait();
                ping_to_move = true;
                ping_turn.notify_one();
            }
        });
        ping.join();
        pong.join();
    });
}

Summary thread_spawn_join_each(long operations) {
    return ns_per_op(operations, [](long count) {
        for (long i = 0; i < count; ++i) std::thread([] {}).join();
    });
}

}  // namespace

void manager_costs(std::vector<Figure>& figures) {
    const Figure* raw = find(figures, "switch_context");
    const double raw_switch = raw ? raw->value.median : 0.0;
    Figure yield{"yield", yield_each(10'000'000)};
    Figure spawn{"spawn_join", spawn_join_each(2'000'000)};
    Figure condvar{"condvar_pingpong", condvar_handoff(10'000'000)};
    Figure thread{"thread_spawn_join", thread_spawn_join_each(20'000)};

    if (raw) compare(yield, "switch_context", "switch_context_ratio", yield.value.median / raw_switch);
    compare(spawn, "faster than thread_spawn_join", "thread_spawn_join_speedup",
            thread.value.median / spawn.value.median);
    compare(condvar, "yield", "yield_ratio", condvar.value.median / yield.value.median);
    for (Figure* figure : {&yield, &spawn, &condvar, &thread}) figures.push_back(*figure);
}

}  // namespace bench
