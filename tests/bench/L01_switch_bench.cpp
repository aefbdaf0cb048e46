// L01_switch_bench.cpp — make bench, lesson 1: what one switch costs, next to the alternatives.
//
//   call              a plain (not inlined) function call and return: the floor
//   switch_context    one-way switch between two contexts that both switch from
//                     the same call site, as fibers do through the manager
//   switch_context_two_sites
//                     the same, but each side calls switch_context from its own
//                     site: every `ret` now goes where the return stack buffer
//                     did not predict (see lesson 1, exercise 3)
//   swapcontext       glibc's ucontext switch (it also saves the signal mask,
//                     a system call each time)
//   thread_pingpong   two OS threads handing a token back and forth through a
//                     futex: one-way hand-off, each side sleeping in the kernel
//   thread_pingpong_spin
//                     the same with std::atomic wait/notify, which spins first
#include <ucontext.h>
#include <unistd.h>

#include <atomic>
#include <climits>
#include <cstdlib>
#include <cstdint>
#include <thread>

#include "L01_thread_pingpong.hpp"
#include "bench.hpp"
#include "fib/context.hpp"
#include "fib/stack.hpp"

namespace bench {
namespace {

[[gnu::noinline]] void empty_function(long* counter) {
    asm volatile("" : : "r"(counter) : "memory");  // keep the call and its argument
}

// The measuring code and its partner. The partner loops forever, and is
// simply never resumed once the measurement ends.
fib::Context main_context, partner_context;

// Both sides switch from this one call site, so each `ret` inside the switch
// returns to the address the CPU's return stack buffer predicts.
[[gnu::noinline]] void bounce(fib::Context* self, fib::Context* other, long switches) {
    for (long i = 0; i < switches; ++i) fib::switch_context(self, other, 0);
}

[[noreturn]] void same_site_partner(std::uintptr_t) {
    bounce(&partner_context, &main_context, LONG_MAX);
    std::abort();
}

// Here each side switches from its own call site.
[[noreturn]] void other_site_partner(std::uintptr_t) {
    for (;;) fib::switch_context(&partner_context, &main_context, 0);
}

[[gnu::noinline]] void other_site_main(long switches) {
    for (long i = 0; i < switches; ++i) fib::switch_context(&main_context, &partner_context, 0);
}

// A round trip is two one-way switches.
Summary switch_one_way(fib::ContextEntry partner, bool same_site, long operations) {
    fib::Stack stack(fib::Stack::kDefaultSize);
    fib::prepare_context(partner_context, stack.top(), partner);
    return ns_per_op(operations, [same_site](long count) {
        if (same_site)
            bounce(&main_context, &partner_context, count / 2);
        else
            other_site_main(count / 2);
    });
}

ucontext_t swap_main, swap_partner;

void swap_partner_loop() {
    for (;;) swapcontext(&swap_partner, &swap_main);
}

Summary swapcontext_one_way(long operations) {
    fib::Stack stack(fib::Stack::kDefaultSize);
    getcontext(&swap_partner);
    swap_partner.uc_stack.ss_sp = stack.bottom();
    swap_partner.uc_stack.ss_size = stack.size();
    swap_partner.uc_link = nullptr;
    makecontext(&swap_partner, swap_partner_loop, 0);
    return ns_per_op(operations, [](long count) {
        for (long i = 0; i < count / 2; ++i) swapcontext(&swap_main, &swap_partner);
    });
}

// Lesson 1's thread_pingpong: a round trip of L01_thread_pingpong.hpp is two
// one-way hand-offs.
Summary thread_pingpong_one_way(long operations) {
    ThreadPingpong threads;
    return ns_per_op(operations, [&threads](long count) { threads.round_trips(count / 2); });
}

// The same with std::atomic wait/notify. libstdc++ spins a while before it
// sleeps, so with a second core free the hand-off rarely reaches the kernel:
// fast, and a core burnt while waiting.
Summary atomic_wait_pingpong_one_way(long operations) {
    std::atomic<int> token{0};
    std::thread partner([&token] {
        for (;;) {
            token.wait(0);
            if (token.load() < 0) return;
            token.store(0);
            token.notify_one();
        }
    });
    const Summary summary = ns_per_op(operations, [&token](long count) {
        for (long i = 0; i < count / 2; ++i) {
            token.store(1);
            token.notify_one();
            token.wait(1);
        }
    });
    token.store(-1);
    token.notify_one();
    partner.join();
    return summary;
}

void switch_costs(std::vector<Figure>& figures) {
    long counter = 0;
    Figure call{"call", ns_per_op(200'000'000, [&counter](long count) {
                    for (long i = 0; i < count; ++i) empty_function(&counter);
                })};
    Figure same{"switch_context", switch_one_way(same_site_partner, true, 20'000'000)};
    Figure two_sites{"switch_context_two_sites", switch_one_way(other_site_partner, false, 20'000'000)};
    Figure swap{"swapcontext", swapcontext_one_way(2'000'000)};
    Figure threads{"thread_pingpong", thread_pingpong_one_way(100'000)};
    Figure spinning{"thread_pingpong_spin", atomic_wait_pingpong_one_way(1'000'000)};

    compare(same, "call", "call_ratio", same.value.median / call.value.median);
    compare(same, "faster than swapcontext", "swapcontext_speedup",
            swap.value.median / same.value.median);
    compare(same, "faster than thread_pingpong", "thread_pingpong_speedup",
            threads.value.median / same.value.median);
    compare(two_sites, "switch_context", "switch_context_ratio",
            two_sites.value.median / same.value.median);
    compare(swap, "call", "call_ratio", swap.value.median / call.value.median);
    compare(threads, "call", "call_ratio", threads.value.median / call.value.median);
    compare(spinning, "switch_context", "switch_context_ratio",
            spinning.value.median / same.value.median);
    for (Figure* figure : {&call, &same, &two_sites, &swap, &threads, &spinning})
        figures.push_back(*figure);
}

[[maybe_unused]] const bool registered[] = {
    add(Section{"switch", 1, false, switch_costs}),
    add(Target{"switch_context, times faster than swapcontext (>= 30)", "switch_context", "swapcontext",
               true, 30, true}),
    add(Target{"switch_context, times faster than thread_pingpong (>= 100)", "switch_context",
               "thread_pingpong", true, 100, true}),
};

}  // namespace
}  // namespace bench
