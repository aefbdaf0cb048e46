// L01_fp_control_test.cpp — lesson 1: MXCSR and the x87 control word (FPCR) belong to each context.
//
// The SysV ABI makes the control bits of MXCSR (SSE rounding, flush-to-zero) and
// of the x87 control word (precision, rounding) callee-saved, so switch_context
// saves and loads them; a fresh context starts with its preparer's. On AArch64,
// AAPCS64 says the same of FPCR (rounding, flush-to-zero, default NaN): the
// second half of this file.
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <ostream>

#include "L01_coroutine.hpp"

namespace {

using l01::Coroutine;

constexpr int kFpRounds = 5;

#if defined(__x86_64__)

// MXCSR bits 13–14 round, 15 flushes to zero; bits 0–5 are status flags, never compared.
constexpr std::uint32_t kMxcsrControl = 0xffc0, kMxcsrRoundAndFlush = 0xe000;
constexpr std::uint32_t kMxcsrDown = 0x2000, kMxcsrUp = 0x4000, kMxcsrToZero = 0x6000;
constexpr std::uint32_t kMxcsrFlushToZero = 0x8000;
// x87 control word bits 8–9 set the precision, bits 10–11 the rounding.
constexpr std::uint16_t kX87PrecisionAndRound = 0x0f00, kX87Single = 0x0000;
constexpr std::uint16_t kX87Double = 0x0200, kX87Extended = 0x0300;
constexpr std::uint16_t kX87Down = 0x0400, kX87Up = 0x0800, kX87ToZero = 0x0c00;

struct FpControl {
    std::uint32_t mxcsr;
    std::uint16_t x87_cw;
    bool operator==(const FpControl&) const = default;
    friend std::ostream& operator<<(std::ostream& out, const FpControl& c) {
        return out << std::hex << "{mxcsr 0x" << c.mxcsr << ", x87 cw 0x" << c.x87_cw << "}";
    }
};

FpControl read_fp_control() {
    FpControl control{__builtin_ia32_stmxcsr() & kMxcsrControl, 0};
    asm volatile("fnstcw %0" : "=m"(control.x87_cw));
    return control;
}
void write_fp_control(FpControl control) {
    __builtin_ia32_ldmxcsr(control.mxcsr);
    asm volatile("fldcw %0" : : "m"(control.x87_cw));
}
// The thread's current control state with other rounding, flushing and x87 precision.
FpControl fp_control_with(std::uint32_t mxcsr_bits, std::uint16_t x87_bits) {
    const FpControl now = read_fp_control();
    return {(now.mxcsr & ~kMxcsrRoundAndFlush) | mxcsr_bits,
            static_cast<std::uint16_t>((now.x87_cw & ~kX87PrecisionAndRound) | x87_bits)};
}
// Gives the test thread its own control state back however the test ends.
struct FpControlRestorer {
    const FpControl saved = read_fp_control();
    ~FpControlRestorer() { write_fp_control(saved); }
};

TEST(L01_Switch, MxcsrAndX87ControlWordArePerContext) {
    FpControlRestorer restorer;
    const FpControl a_own = fp_control_with(kMxcsrToZero, kX87ToZero | kX87Single);
    const FpControl b_own = fp_control_with(kMxcsrDown | kMxcsrFlushToZero, kX87Up | kX87Double);
    const FpControl main_own = fp_control_with(kMxcsrUp, kX87Down | kX87Extended);
    std::array<FpControl, kFpRounds> a_seen{}, b_seen{}, main_seen{};
    // Each context sets its own state once, then reads it back every time it resumes.
    auto player = [](FpControl own, std::array<FpControl, kFpRounds>& seen) {
        return [own, &seen](Coroutine& self) {
            write_fp_control(own);
            for (auto& look : seen) {
                self.yield();
                look = read_fp_control();
            }
        };
    };
    Coroutine a(player(a_own, a_seen)), b(player(b_own, b_seen));
    a.resume();
    b.resume();
    write_fp_control(main_own);
    for (auto& look : main_seen) {
        a.resume();
        b.resume();
        look = read_fp_control();
    }
    write_fp_control(restorer.saved);
    for (int round = 0; round < kFpRounds; ++round) {
        SCOPED_TRACE(round);
        EXPECT_EQ(a_seen[round], a_own);
        EXPECT_EQ(b_seen[round], b_own);
        EXPECT_EQ(main_seen[round], main_own);
    }
}

TEST(L01_Switch, FreshContextStartsWithTheFpControlOfItsPreparer) {
    FpControlRestorer restorer;
    const FpControl at_prepare = fp_control_with(kMxcsrToZero, kX87Up | kX87Single);
    FpControl seen{};
    write_fp_control(at_prepare);
    Coroutine fresh([&seen](Coroutine&) { seen = read_fp_control(); });  // prepares
    // The thread's own state again before the switch: the context must not get it.
    write_fp_control(restorer.saved);
    fresh.resume();
    EXPECT_EQ(seen, at_prepare);
    EXPECT_EQ(read_fp_control(), restorer.saved);
}

#elif defined(__aarch64__)

// FPCR bits 22–23 round (to nearest, up, down, to zero), 24 flushes to zero, 25 makes
// every NaN the default one. The trap-enable bits are left alone: most cores ignore them.
constexpr std::uint64_t kFpcrRoundFlushAndNan = 0x3c00000;
constexpr std::uint64_t kFpcrUp = 0x400000, kFpcrDown = 0x800000, kFpcrToZero = 0xc00000;
constexpr std::uint64_t kFpcrFlushToZero = 0x1000000, kFpcrDefaultNan = 0x2000000;

std::uint64_t read_fpcr() {
    std::uint64_t fpcr;
    asm volatile("mrs %0, fpcr" : "=r"(fpcr));
    return fpcr;
}
void write_fpcr(std::uint64_t fpcr) { asm volatile("msr fpcr, %0" : : "r"(fpcr)); }
// The thread's current FPCR with other rounding, flushing and NaN bits.
std::uint64_t fpcr_with(std::uint64_t bits) { return (read_fpcr() & ~kFpcrRoundFlushAndNan) | bits; }
// Gives the test thread its own FPCR back however the test ends.
struct FpcrRestorer {
    const std::uint64_t saved = read_fpcr();
    ~FpcrRestorer() { write_fpcr(saved); }
};

TEST(L01_Switch, FpcrIsPerContext) {
    FpcrRestorer restorer;
    const std::uint64_t a_own = fpcr_with(kFpcrToZero | kFpcrFlushToZero);
    const std::uint64_t b_own = fpcr_with(kFpcrDown | kFpcrDefaultNan);
    const std::uint64_t main_own = fpcr_with(kFpcrUp);
    std::array<std::uint64_t, kFpRounds> a_seen{}, b_seen{}, main_seen{};
    // Each context sets its own FPCR once, then reads it back every time it resumes.
    auto player = [](std::uint64_t own, std::array<std::uint64_t, kFpRounds>& seen) {
        return [own, &seen](Coroutine& self) {
            write_fpcr(own);
            for (auto& look : seen) {
                self.yield();
                look = read_fpcr();
            }
        };
    };
    Coroutine a(player(a_own, a_seen)), b(player(b_own, b_seen));
    a.resume();
    b.resume();
    write_fpcr(main_own);
    for (auto& look : main_seen) {
        a.resume();
        b.resume();
        look = read_fpcr();
    }
    write_fpcr(restorer.saved);
    for (int round = 0; round < kFpRounds; ++round) {
        SCOPED_TRACE(round);
        EXPECT_EQ(a_seen[round], a_own);
        EXPECT_EQ(b_seen[round], b_own);
        EXPECT_EQ(main_seen[round], main_own);
    }
}

TEST(L01_Switch, FreshContextStartsWithTheFpcrOfItsPreparer) {
    FpcrRestorer restorer;
    const std::uint64_t at_prepare = fpcr_with(kFpcrToZero | kFpcrDefaultNan);
    std::uint64_t seen = 0;
    write_fpcr(at_prepare);
    Coroutine fresh([&seen](Coroutine&) { seen = read_fpcr(); });  // prepares
    // The thread's own FPCR again before the switch: the context must not get it.
    write_fpcr(restorer.saved);
    fresh.resume();
    EXPECT_EQ(seen, at_prepare);
    EXPECT_EQ(read_fpcr(), restorer.saved);
}

#endif

}  // namespace
