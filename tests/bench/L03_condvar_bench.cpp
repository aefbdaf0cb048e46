// L03_condvar_bench.cpp — make bench, lesson 3: a hand-off through CondVars, next to a yield.
//
//   condvar_pingpong   two fibers handing a turn back and forth through CondVars:
//                      ns per one-way hand-off (a notify, a wait, a switch)
#include "bench.hpp"
#include "fib/condvar.hpp"
#include "fib/fiber.hpp"

namespace bench {
namespace {

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

void condvar_costs(std::vector<Figure>& figures) {
    Figure condvar{"condvar_pingpong", condvar_handoff(10'000'000)};
    if (const Figure* yield = find(figures, "yield"))
        compare(condvar, "yield", "yield_ratio", condvar.value.median / yield->value.median);
    figures.push_back(condvar);
}

[[maybe_unused]] const bool registered = add(Section{"condvar", 3, false, condvar_costs});

}  // namespace
}  // namespace bench
