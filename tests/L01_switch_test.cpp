// L01_switch_test.cpp — lesson 1: switch_context and prepare_context keep every promise.
//
// Registers, alignment, the argument, many round trips, a clean end for
// unwinders, and a clear death for an entry function that returns.
// Code on a fresh context only records what it sees; the test thread checks it.
#include <gtest/gtest.h>
#include <unwind.h>

#include <array>
#include <cstdint>
#include <functional>
#include <ostream>
#include <utility>

#include "L01_coroutine.hpp"
#include "L01_sanitizers.hpp"
#include "fib/context.hpp"
#include "fib/stack.hpp"

// The entry probe of tests/L01_probes.S (tests/L01_probes_aarch64.S), and its C++ half.
#if defined(__x86_64__)
extern "C" void probe_entry_passing_rsp(std::uintptr_t arg);
#elif defined(__aarch64__)
extern "C" void probe_entry_passing_sp(std::uintptr_t arg);
#endif
extern "C" void probe_entry_continue(std::uintptr_t arg, std::uintptr_t entry_sp);

namespace {

using l01::Coroutine;

// ---- Callee-saved registers --------------------------------------------------------------

constexpr int kRegisterRounds = 4;

// The fields of the registers the probe holds: rbx, rbp, r12–r15 on x86-64; x19–x28,
// fp (x29) and d8–d15 on AArch64.
#if defined(__x86_64__)
constexpr std::size_t kHeld = 6;
std::array<std::uint64_t*, kHeld> held_fields(fib::Context& c) {
    return {&c.rbx, &c.rbp, &c.r12, &c.r13, &c.r14, &c.r15};
}
#elif defined(__aarch64__)
constexpr std::size_t kHeld = 19;
std::array<std::uint64_t*, kHeld> held_fields(fib::Context& c) {
    return {&c.x19, &c.x20, &c.x21, &c.x22, &c.x23, &c.x24, &c.x25, &c.x26, &c.x27, &c.x28,
            &c.fp,  &c.d8,  &c.d9,  &c.d10, &c.d11, &c.d12, &c.d13, &c.d14, &c.d15};
}
#endif

// Those registers as one comparable, printable value.
std::array<std::uint64_t, kHeld> callee_saved(fib::Context c) {
    std::array<std::uint64_t, kHeld> values;
    const auto fields = held_fields(c);
    for (std::size_t index = 0; index < kHeld; ++index) values[index] = *fields[index];
    return values;
}
// Distinct values: `side` names the context, the low bits the register and round.
fib::Context register_pattern(std::uint64_t side, int round) {
    fib::Context pattern;
    const auto fields = held_fields(pattern);
    for (std::uint64_t index = 0; index < kHeld; ++index)
        *fields[index] = side + (index << 8) + static_cast<std::uint64_t>(round);
    return pattern;
}
constexpr std::uint64_t kMainSide = 0x4d41494e00000000, kOtherSide = 0xbad0bad0bad00000;

// Both sides switch through the probe holding their own pattern in every held
// register, so each gets its values back only if switch_context restores them.
TEST(L01_Switch, CalleeSavedRegistersSurviveAContextThatClobbersThem) {
    int other_lost = 0;
    Coroutine other([&](Coroutine& self) {
        for (int round = 0; round < kRegisterRounds; ++round) {
            const fib::Context mine = register_pattern(kOtherSide, round);
            fib::Context seen;
            const Coroutine::Probe probe{&mine, &seen};
            self.yield(&probe);
            if (callee_saved(seen) != callee_saved(mine)) ++other_lost;
        }
    });
    for (int round = 0; round < kRegisterRounds; ++round) {
        const fib::Context mine = register_pattern(kMainSide, round);
        fib::Context seen;
        const Coroutine::Probe probe{&mine, &seen};
        other.resume(reinterpret_cast<std::uintptr_t>(&other), &probe);
        // The other side really held its own values when it switched back ...
        EXPECT_EQ(callee_saved(other.self), callee_saved(register_pattern(kOtherSide, round)));
        // ... yet main got every one of its own back.
        EXPECT_EQ(callee_saved(seen), callee_saved(mine));
    }
    // Let the other side check its last round and finish.
    other.resume();
    EXPECT_EQ(other_lost, 0);
}

// The same a million times over, each side counting the rounds it got any register back
// changed: a switch that loses one only now and then (a register the save and the load
// agree on by chance) shows here.
TEST(L01_Switch, CalleeSavedRegistersSurviveAMillionSwitches) {
    constexpr long kRounds = fewer_under_thread_sanitizer(1'000'000);
    const fib::Context main_values = register_pattern(kMainSide, 1);
    const fib::Context other_values = register_pattern(kOtherSide, 2);
    long main_lost = 0, other_lost = 0;
    Coroutine other([&](Coroutine& self) {
        fib::Context seen;
        const Coroutine::Probe probe{&other_values, &seen};
        for (long round = 0; round < kRounds; ++round) {
            self.yield(&probe);
            if (callee_saved(seen) != callee_saved(other_values)) ++other_lost;
        }
    });
    fib::Context seen;
    const Coroutine::Probe probe{&main_values, &seen};
    for (long round = 0; round < kRounds; ++round) {
        other.resume(reinterpret_cast<std::uintptr_t>(&other), &probe);
        if (callee_saved(seen) != callee_saved(main_values)) ++main_lost;
    }
    other.resume();
    EXPECT_EQ(main_lost, 0);
    EXPECT_EQ(other_lost, 0);
}

// ---- The entry function: its stack alignment and its argument ---------------------------

// What a raw entry function saw, and the coroutine it runs on (found here, not via arg).
Coroutine* entry_coroutine = nullptr;
std::uintptr_t entry_arg = 0, entry_sp = 0;

}  // namespace

// Reached from the entry probe with the stack pointer of the entry's first instruction.
extern "C" void probe_entry_continue(std::uintptr_t arg, std::uintptr_t sp) {
    entry_coroutine->arrive();
    entry_arg = arg;
    entry_sp = sp;
    entry_coroutine->leave();
}

namespace {

// prepare_context rounds the top down itself, so every misalignment of the top is tried.
#if defined(__x86_64__)
TEST(L01_Switch, EntryStartsWithRspPlus8AlignedTo16ForAnyStackTop) {
    for (std::size_t below_top = 0; below_top < 16; ++below_top) {
        SCOPED_TRACE(below_top);
        Coroutine fresh(probe_entry_passing_rsp, below_top);
        entry_coroutine = &fresh;
        fresh.resume(below_top);
        EXPECT_EQ(entry_arg, below_top);
        EXPECT_EQ((entry_sp + 8) % 16, 0u);
        // Only the trampoline's return address lies between the top and the entry's rsp.
        const auto top = reinterpret_cast<std::uintptr_t>(fresh.stack.top()) - below_top;
        EXPECT_LE(entry_sp, top - 8);
        EXPECT_GT(entry_sp, top - 24);
    }
}
#elif defined(__aarch64__)
TEST(L01_Switch, EntryStartsWithSpAlignedTo16ForAnyStackTop) {
    for (std::size_t below_top = 0; below_top < 16; ++below_top) {
        SCOPED_TRACE(below_top);
        Coroutine fresh(probe_entry_passing_sp, below_top);
        entry_coroutine = &fresh;
        fresh.resume(below_top);
        EXPECT_EQ(entry_arg, below_top);
        EXPECT_EQ(entry_sp % 16, 0u);
        // A call pushes nothing: the entry's sp is the top itself, rounded down to 16.
        const auto top = reinterpret_cast<std::uintptr_t>(fresh.stack.top()) - below_top;
        EXPECT_EQ(entry_sp, top & ~std::uintptr_t{15});
    }
}
#endif

TEST(L01_Switch, ArgArrivesAsTheEntryFunctionsFirstArgument) {
    constexpr std::uintptr_t kDistinctive = 0xfeedfacecafebeef;
    Coroutine fresh([](std::uintptr_t arg) {
        entry_coroutine->arrive();
        entry_arg = arg;
        entry_coroutine->leave();
    });
    entry_coroutine = &fresh;
    fresh.resume(kDistinctive);
    EXPECT_EQ(entry_arg, kDistinctive);
}

// ---- Many round trips, unwinding, misuse ------------------------------------------------

TEST(L01_Switch, AMillionRoundTripsEachRunTheOtherContextExactlyOnce) {
    constexpr std::uint64_t kRoundTrips = 1'000'000;
    std::uint64_t trips = 0, out_of_step = 0;
    Coroutine counter([&trips](Coroutine& self) {
        for (std::uint64_t trip = 1; trip < kRoundTrips; ++trip) {
            ++trips;
            self.yield();
        }
        // The last trip back is leave(), for good, once the body returns.
        ++trips;
    });
    for (std::uint64_t trip = 1; trip <= kRoundTrips; ++trip) {
        counter.resume();
        if (trips != trip) ++out_of_step;
    }
    EXPECT_EQ(trips, kRoundTrips);
    EXPECT_EQ(out_of_step, 0u);
}

// What _Unwind_Backtrace found: how many frames, and the outermost one.
struct Walk {
    int frames = 0;
    void* outermost_ip = nullptr;
};
_Unwind_Reason_Code count_frame(_Unwind_Context* context, void* data) {
    auto& walk = *static_cast<Walk*>(data);
    // libgcc reports the end as one more frame with ip 0: not a frame.
    if (const auto ip = _Unwind_GetIP(context)) {
        ++walk.frames;
        walk.outermost_ip = reinterpret_cast<void*>(ip);
    }
    return walk.frames < 32 ? _URC_NO_REASON : _URC_NORMAL_STOP;
}

// Walks the fresh context's stack with the unwinder that gdb's `bt` and a throw rely on.
TEST(L01_Switch, UnwindingAFreshContextEndsCleanlyAtTheTrampoline) {
    constexpr std::size_t kAboveTop = 64;
    Walk walk;
    _Unwind_Reason_Code result = _URC_NO_REASON;
    Coroutine fresh([&](Coroutine&) { result = _Unwind_Backtrace(count_frame, &walk); }, kAboveTop);
    // Above the context's top, where a caller may keep data of its own, lie plausible
    // return addresses (readable, but no code): only .cfi_undefined rip (x30 on AArch64) stops
    // the walk there.
    auto* const above =
        reinterpret_cast<std::uintptr_t*>(static_cast<char*>(fresh.stack.top()) - kAboveTop);
    for (std::size_t word = 0; word < kAboveTop / sizeof *above; ++word)
        above[word] = reinterpret_cast<std::uintptr_t>(&walk);
    fresh.resume();
    EXPECT_EQ(result, _URC_END_OF_STACK);
    // At most this lambda, std::function's invoker, run_body and the trampoline.
    EXPECT_LE(walk.frames, 4);
    // The walk stops at the trampoline, whose .cfi_undefined rip says "outermost".
    EXPECT_EQ(_Unwind_FindEnclosingFunction(walk.outermost_ip),
              reinterpret_cast<void*>(&fib::context_trampoline));
}

TEST(L01_SwitchDeathTest, EntryFunctionThatReturnsDiesWithAClearMessage) {
    EXPECT_DEATH(
        {
            Coroutine fresh(
                [](std::uintptr_t arg) { reinterpret_cast<Coroutine*>(arg)->arrive(); });
            fresh.resume();
        },
        "fib: fatal: a context's entry function returned");
}

}  // namespace
