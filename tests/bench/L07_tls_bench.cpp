// L07_tls_bench.cpp — make bench, lesson 7: what fiber-local storage adds to a switch, a spawn and memory.
//
//   switch_fs            one-way switch with switch_context_fs: %fs base loaded by
//                        wrfsbase, then switch_context (two contexts, one call site,
//                        as L01_switch_bench's switch_context row)
//   switch_gs            the same with switch_context_gs: %gs base by wrgsbase
//   switch_fs_gs         the same with switch_context_fs_gs: both bases
//   switch_arch_prctl    the same with switch_context_fs_syscall, the fallback
//                        without FSGSBASE: arch_prctl(2), a system call per switch
//   spawn_join_tls       spawn_join with a FiberTls installed (thread_locals and
//                        fiber_locals on): each fiber runs on a recycled TLS block
//   rss_100k_tls_fibers  growth of this process's RSS, in bytes, over 100,000 TLS
//                        fibers made and ended one after another (each touches a
//                        thread_local and mallocs): recycled blocks keep it flat
//   tls_block_bytes      heap bytes per fresh TLS block: 1,000 fibers alive at once,
//                        with FiberTls minus without, divided by 1,000
// The wrfsbase rows need FSGSBASE (tls_switch.hpp); without it they are skipped.
// On AArch64 the switch rows are switch_tp (msr tpidr_el0), switch_locals (the
// fiber_local block stored in a thread_local) and switch_tp_locals; under
// qemu-user they measure the emulator, not a CPU.
#include <malloc.h>

#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>

#include "L02_blocked_fibers.hpp"
#include "bench.hpp"
#include "fib/fiber.hpp"
#include "fib/fiber_tls.hpp"
#include "fib/glibc_tls.hpp"
#include "fib/stack.hpp"
#include "fib/tls_switch.hpp"

namespace bench {
namespace {

constexpr int kMemoryRepetitions = 5;
constexpr long kSequentialFibers = 100'000;
constexpr long kWarmUpFibers = 1'000;
constexpr long kAliveFibers = 1'000;

// The measuring code and its partner, as in L01_switch_bench.cpp: the partner
// loops forever and is simply never resumed once the measurement ends.
fib::Context main_context, partner_context;

// Both sides switch from this one call site. The routine is a template
// argument, so each is called directly, as switch_context is in its row.
template <fib::SwitchRoutine Routine>
[[gnu::noinline]] void bounce(fib::Context* self, fib::Context* other, long switches) {
    for (long i = 0; i < switches; ++i) Routine(self, other, 0);
}

template <fib::SwitchRoutine Routine>
[[noreturn]] void partner_loop(std::uintptr_t) {
    bounce<Routine>(&partner_context, &main_context, LONG_MAX);
    std::abort();
}

// Both contexts get the same bases, so every switch writes a base register
// with the value it already holds: what is measured is the cost of the write,
// nothing the new base would change. A round trip is two one-way switches.
template <fib::SwitchRoutine Routine>
Summary switch_one_way(std::uint64_t fs_base, std::uint64_t gs_base, long operations) {
    fib::Stack stack(fib::Stack::kDefaultSize);
    fib::prepare_context(partner_context, stack.top(), partner_loop<Routine>);
    fib::tls_base(main_context) = fib::tls_base(partner_context) = fs_base;
    fib::locals_base(main_context) = fib::locals_base(partner_context) = gs_base;
    return ns_per_op(operations, [](long count) {
        bounce<Routine>(&main_context, &partner_context, count / 2);
    });
}

// A fiber_local block for the %gs rows: its first word points to itself, as
// in fiber_local.hpp (nothing here reads through it).
alignas(64) void* gs_block[8] = {gs_block};

// What each fiber of the memory rows does: write a thread_local of the
// executable (on its own TLS block) and go through malloc and free.
thread_local long fiber_touches = 0;

void touch_tls_and_heap() {
    ++fiber_touches;
    void* memory = std::malloc(64);
    asm volatile("" : : "r"(memory) : "memory");  // keep the malloc/free pair
    std::free(memory);
}

// spawn_join's loop (manager_bench.cpp) with a FiberTls installed. The
// manager and the FiberTls are made here: none exists when this section runs,
// and a thread has one manager at a time.
Summary spawn_join_tls_each(long operations) {
    fib::FiberManager manager;
    fib::FiberTls tls(manager);
    return ns_per_op(operations, [](long count) {
        for (long i = 0; i < count; ++i) fib::Fiber([] {}).join();
    });
}

// One repetition: a fresh manager and FiberTls, a warm-up (the first block,
// stack and malloc cache are made here), then 100,000 fibers, each spawned and
// joined before the next, so each takes the block the last one gave back.
double rss_growth_sequential(fib::FiberTlsStats* stats) {
    fib::FiberManager manager;
    fib::FiberTls tls(manager);
    for (long i = 0; i < kWarmUpFibers; ++i) fib::Fiber(touch_tls_and_heap).join();
    const long before = resident_bytes();
    for (long i = 0; i < kSequentialFibers; ++i) fib::Fiber(touch_tls_and_heap).join();
    const long after = resident_bytes();
    *stats = tls.stats();
    return static_cast<double>(after - before);
}

// Bytes malloc has handed out and not had back: in the arenas (chunk headers
// included) plus chunks large enough to be mmapped on their own.
long heap_in_use() {
    const struct mallinfo2 info = mallinfo2();
    return static_cast<long>(info.uordblks + info.hblkhd);
}

// The heap growth while 1,000 fibers are alive at once, all blocked.
// With FiberTls each holds a fresh TLS block (every module's TLS, glibc's
// struct pthread, the DTV) and a fiber_local block; the stacks are mmapped
// and not on the heap. A fiber that mallocs on a fresh block would also get
// malloc's per-thread cache (and perhaps an arena); these do not, so it is
// not counted here: L07_malloc_bench.cpp's rows count it.
double heap_growth_alive(bool with_tls) {
    fib::FiberManager manager;
    std::optional<fib::FiberTls> tls;
    if (with_tls) tls.emplace(manager);
    const long before = heap_in_use();
    const long after = while_fibers_blocked(manager, kAliveFibers, heap_in_use);
    return static_cast<double>(after - before);
}

void tls_costs(std::vector<Figure>& figures) {
    const Figure* raw = find(figures, "switch_context");
    std::vector<Figure> rows;
    const auto tp = reinterpret_cast<std::uint64_t>(fib::thread_pointer());
    const auto gs = reinterpret_cast<std::uint64_t>(gs_block);
#if defined(__aarch64__)
    // The locals rows leave the thread's fiber_local block at gs_block: put back its own.
    char* const thread_block = fib::detail::fiber_local_block;
    rows.emplace_back("switch_tp", switch_one_way<&switch_context_tp>(tp, 0, 20'000'000));
    rows.emplace_back("switch_locals", switch_one_way<&switch_context_locals>(0, gs, 20'000'000));
    rows.emplace_back("switch_tp_locals", switch_one_way<&switch_context_tp_locals>(tp, gs, 20'000'000));
    fib::set_gs_base(thread_block);
#else
    if (fib::fsgsbase_usable()) {
        // The %gs rows leave %gs at gs_block: put back what the thread had (0
        // unless a fiber_local gave it a block), the base gs_block_ready vouches for.
        std::uint64_t thread_gs;
        asm volatile("rdgsbase %0" : "=r"(thread_gs));
        rows.emplace_back("switch_fs", switch_one_way<&switch_context_fs>(tp, 0, 20'000'000));
        rows.emplace_back("switch_gs", switch_one_way<&switch_context_gs>(0, gs, 20'000'000));
        rows.emplace_back("switch_fs_gs", switch_one_way<&switch_context_fs_gs>(tp, gs, 20'000'000));
        fib::set_gs_base(reinterpret_cast<const void*>(thread_gs));
    } else {
        std::printf("switch_fs, switch_gs, switch_fs_gs skipped: wrfsbase/wrgsbase are not usable "
                    "here (no FSGSBASE, or FIB_TLS_SWITCH=arch_prctl)\n");
    }
    // A system call per switch: ten times fewer switches keep this row short.
    rows.emplace_back("switch_arch_prctl", switch_one_way<&switch_context_fs_syscall>(tp, 0, 2'000'000));
#endif
    if (raw)
        for (Figure& row : rows)
            compare(row, "switch_context", "switch_context_ratio", row.value.median / raw->value.median);

    Figure spawn{"spawn_join_tls", spawn_join_tls_each(1'000'000)};
    if (const Figure* plain = find(figures, "spawn_join"))
        compare(spawn, "spawn_join", "spawn_join_ratio", spawn.value.median / plain->value.median);
#if !defined(__aarch64__)
    spawn.result_extra += fib::fsgsbase_usable() ? " fsgsbase=1" : " fsgsbase=0";
#endif
    rows.push_back(spawn);

    std::vector<double> growth;
    fib::FiberTlsStats stats;
    for (int i = 0; i < kMemoryRepetitions; ++i) growth.push_back(rss_growth_sequential(&stats));
    Figure rss{"rss_100k_tls_fibers", summarize(growth), "bytes"};
    rss.repetitions = kMemoryRepetitions;
    rss.compared = std::to_string(kSequentialFibers) + " TLS fibers one after another; " +
                   std::to_string(stats.tls_blocks_created) + " TLS block(s) made";
    rss.result_extra = " fibers=" + std::to_string(kSequentialFibers) +
                       " tls_blocks_created=" + std::to_string(stats.tls_blocks_created) +
                       " local_blocks_created=" + std::to_string(stats.local_blocks_created);
    rows.push_back(rss);

    // Each repetition: with FiberTls minus without, per fiber.
    std::vector<double> per_block;
    for (int i = 0; i < kMemoryRepetitions; ++i) {
        const double with_tls = heap_growth_alive(true);
        per_block.push_back((with_tls - heap_growth_alive(false)) / kAliveFibers);
    }
    Figure block{"tls_block_bytes", summarize(per_block), "bytes"};
    block.repetitions = kMemoryRepetitions;
    block.compared = std::to_string(kAliveFibers) + " fibers alive: heap with FiberTls minus without";
    block.result_extra = " fibers=" + std::to_string(kAliveFibers);
    rows.push_back(block);

    for (Figure& row : rows) figures.push_back(row);
}

[[maybe_unused]] const bool registered = add(Section{"tls", 7, false, tls_costs});

}  // namespace
}  // namespace bench
