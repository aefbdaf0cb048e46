// L12_stack_test.cpp — lesson 12: stack_high_water() says how deep a fiber wrote its stack: small for
// a trivial fiber, past a big frame for one that called it, right again (in a StackHighWaterScope)
// for a fiber that gets a pooled stack after a deep one, never above the reserved size; and an
// overflow still stops at the guard.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstring>

#include "L01_sanitizers.hpp"
#include "fib/fiber.hpp"
#include "fib/stack.hpp"
#include "fib/stack_high_water.hpp"

namespace {

constexpr std::size_t kBigFrame = 16 * 1024;
// What a trivial fiber stays under: its record, its callable and a few frames. Instrumented
// code and the sanitizer runtime's own frames (make SAN=1) take about 4.3 KiB.
constexpr std::size_t kSmall = UNDER_A_SANITIZER ? 8192 : 4096;

// A frame of kBigFrame bytes, every byte written non-zero (volatile: the compiler keeps the
// writes), and the high-water mark measured from inside it. Not instrumented by AddressSanitizer,
// which would move the array to its fake stack on the heap (make SAN=1 test).
__attribute__((noinline, no_sanitize("address"))) std::size_t high_water_inside_a_big_frame() {
    volatile char frame[kBigFrame];
    for (std::size_t i = 0; i < kBigFrame; ++i) frame[i] = 1;
    return fib::this_fiber::stack_high_water() + frame[0] - 1;
}

// The high-water mark of a fiber that runs `body` and then measures its own stack.
template <class Body>
std::size_t high_water_of_a_fiber(Body body, const void** stack_bottom = nullptr) {
    std::size_t high_water = 0;
    fib::Fiber fiber([&] {
        body();
        high_water = fib::this_fiber::stack_high_water();
        if (stack_bottom) *stack_bottom = fib::FiberManager::current()->running()->stack.bottom();
    });
    fiber.join();
    return high_water;
}

TEST(L12_StackHighWater, ATrivialFiberStaysSmall) {
    fib::FiberManager manager;
    const std::size_t high_water = high_water_of_a_fiber([] {});
    EXPECT_GT(high_water, 0u);  // its record and callable at least
    EXPECT_LT(high_water, kSmall);
}

TEST(L12_StackHighWater, GrowsPastABigFrameAndStaysThereAfterItReturns) {
    fib::FiberManager manager;
    std::size_t inside = 0;
    const std::size_t after = high_water_of_a_fiber([&] { inside = high_water_inside_a_big_frame(); });
    EXPECT_GT(inside, kBigFrame);
    EXPECT_LT(inside, kBigFrame + kSmall);
    EXPECT_GE(after, inside);  // the frame's words are still written below
}

// The pitfall: a pooled stack still holds what its last fiber wrote, unless the pool erased it.
TEST(L12_StackHighWater, IsRightForAFiberThatGetsThePooledStackOfADeepOne) {
    fib::FiberManager manager;
    const fib::StackHighWaterScope measured;
    const void* deep_bottom = nullptr;
    const void* trivial_bottom = nullptr;
    const std::size_t deep = high_water_of_a_fiber([] { high_water_inside_a_big_frame(); }, &deep_bottom);
    const std::size_t trivial = high_water_of_a_fiber([] {}, &trivial_bottom);
    ASSERT_EQ(trivial_bottom, deep_bottom) << "the second fiber did not get the first one's stack";
    EXPECT_GT(deep, kBigFrame);
    EXPECT_LT(trivial, kSmall);
}

TEST(L12_StackHighWater, NeverExceedsTheReservedSize) {
    fib::FiberManager manager;
    std::size_t reserved = 0;
    const std::size_t high_water = high_water_of_a_fiber([&] {
        reserved = fib::stack_reserved(*fib::FiberManager::current()->running());
        high_water_inside_a_big_frame();
    });
    EXPECT_EQ(reserved, fib::Stack::kDefaultSize);
    EXPECT_LE(high_water, reserved);
    fib::Stack written(fib::Stack::kDefaultSize);
    std::memset(written.bottom(), 0xff, written.size());
    EXPECT_EQ(fib::stack_high_water(written), written.size());
}

TEST(L12_StackHighWater, CountsFromTheDeepestNonZeroWordSoZerosBelowItAreNotCounted) {
    fib::Stack stack(fib::Stack::kDefaultSize);
    EXPECT_EQ(fib::stack_high_water(stack), 0u);  // nothing resident, nothing written
    char* top = static_cast<char*>(stack.top());
    top[-1] = 1;
    std::memset(top - 8192, 0, 4096);  // written, but with zeros: the documented error
    EXPECT_EQ(fib::stack_high_water(stack), 8u);
    top[-5001] = 1;  // in the word that starts 5008 bytes below top()
    EXPECT_EQ(fib::stack_high_water(stack), 5008u);
}

// Outside a scope the pool hands the stack out as it was: the figure is then an upper bound.
TEST(L12_StackHighWater, OutsideAScopeAReusedStackCountsWhatItsEarlierFiberWrote) {
    fib::FiberManager manager;
    high_water_of_a_fiber([] { high_water_inside_a_big_frame(); });
    EXPECT_GT(high_water_of_a_fiber([] {}), kBigFrame);
    {
        const fib::StackHighWaterScope measured;
        EXPECT_LT(high_water_of_a_fiber([] {}), kSmall);
    }
    EXPECT_FALSE(fib::StackHighWaterScope::active());
}

TEST(L12_StackHighWater, IsZeroForTheMainFiberAndAnEmptyStack) {
    fib::FiberManager manager;
    EXPECT_EQ(fib::this_fiber::stack_high_water(), 0u);
    EXPECT_EQ(fib::stack_high_water(fib::Stack()), 0u);
}

// Recursion far deeper than a stack (1,000,000 frames of 256 bytes) on a fiber: the measuring
// changed nothing about the guard.
__attribute__((noinline)) int recurse(int depth, volatile char* caller_frame) {
    volatile char frame[256];
    frame[0] = static_cast<char>(caller_frame[0] + 1);
    if (depth >= 1'000'000) return frame[0];
    return recurse(depth + 1, frame) + frame[0];
}

TEST(L12_StackHighWaterDeathTest, AFiberThatOverflowsIsStillStoppedByTheGuard) {
    EXPECT_DEATH(
        {
            fib::FiberManager manager;
            high_water_of_a_fiber([] {
                volatile char seed = 0;
                recurse(0, &seed);
            });
        },
        "fib: fatal: stack overflow in fiber 1: its stack is 65536 bytes; "
        "the access at 0x[0-9a-f]+ hit the guard below it");
}

}  // namespace
