// L01_stack_test.cpp — lesson 1: a Stack is whole pages, guarded below, owned once, usable.
//
// Stage 1 has no stack-overflow handler of its own, so touching the guard page
// here must end the process with a plain SIGSEGV.
#include <gtest/gtest.h>
#include <sanitizer/asan_interface.h>
#include <sys/mman.h>

#include <cerrno>
#include <csignal>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "L01_sanitizers.hpp"
#include "fib/context.hpp"
#include "fib/sanitizer.hpp"
#include "fib/stack.hpp"

namespace {

char* as_bytes(void* address) { return static_cast<char*>(address); }

// Whether the kernel has a mapping at `address` (any protection): msync says ENOMEM if not.
bool is_mapped(void* address) {
    const auto page = reinterpret_cast<std::uintptr_t>(address) & ~(fib::page_size() - 1);
    return msync(reinterpret_cast<void*>(page), 1, MS_ASYNC) == 0 || errno != ENOMEM;
}

std::size_t count_lines(const char* path) {
    std::ifstream file(path);
    std::size_t lines = 0;
    for (std::string line; std::getline(file, line);) ++lines;
    return lines;
}

// Guard regions (Linux 6.13+) keep each stack a single mapping, and neighbours merge, so more
// than vm.max_map_count / 2 stacks can be live at once: with mprotect'ed guards they could
// not. Skipped where stacks get no guard regions (the kernel's madvise says EINVAL, or, under
// qemu-user, the guard does not fault: stack.cpp's probe).
TEST(L01_Stack, WithGuardRegionsMoreStacksLiveThanHalfTheMappingLimit) {
    SKIP_UNDER_THREAD_SANITIZER("it maps stacks up to the kernel's mapping limit, and TSan, which "
                                "maps memory of its own as the program runs, would fail first");
    if (!fib::guard_regions())
        GTEST_SKIP() << "no guard regions here: MADV_GUARD_INSTALL is missing (Linux < 6.13) "
                        "or does not fault (qemu-user)";
    std::ifstream limit_file("/proc/sys/vm/max_map_count");
    std::size_t limit = 0;
    limit_file >> limit;
    ASSERT_GT(limit, 0u);
    std::vector<fib::Stack> stacks;
    stacks.reserve(limit / 2 + 1000);
    for (std::size_t i = 0; i < limit / 2 + 1000; ++i) stacks.emplace_back(4 * fib::page_size());
    EXPECT_LT(count_lines("/proc/self/maps"), limit / 2);
}

TEST(L01_Stack, UsableSizeIsRoundedUpToWholePages) {
    const std::size_t page = fib::page_size();
    EXPECT_EQ(fib::Stack(1).size(), page);
    EXPECT_EQ(fib::Stack(page).size(), page);
    EXPECT_EQ(fib::Stack(page + 1).size(), 2 * page);
    EXPECT_EQ(fib::Stack(fib::Stack::kDefaultSize).size() % page, 0u);
    EXPECT_GE(fib::Stack(fib::Stack::kDefaultSize).size(), fib::Stack::kDefaultSize);
}

TEST(L01_Stack, TopMinusBottomIsTheSizeAndBothArePageAligned) {
    const fib::Stack stack(3 * fib::page_size() + 100);
    const auto top = reinterpret_cast<std::uintptr_t>(stack.top());
    const auto bottom = reinterpret_cast<std::uintptr_t>(stack.bottom());
    EXPECT_EQ(top - bottom, stack.size());
    EXPECT_EQ(top % 16, 0u);
    EXPECT_EQ(top % fib::page_size(), 0u);
    EXPECT_EQ(bottom % fib::page_size(), 0u);
}

TEST(L01_Stack, GuardIsExactlyTheGuardSizeJustBelowBottom) {
    const fib::Stack stack(fib::Stack::kDefaultSize);
    char* const bottom = as_bytes(stack.bottom());
    EXPECT_TRUE(stack.guard_contains(bottom - 1));
    EXPECT_TRUE(stack.guard_contains(bottom - fib::Stack::kGuardSize));
    EXPECT_FALSE(stack.guard_contains(bottom - fib::Stack::kGuardSize - 1));
    EXPECT_FALSE(stack.guard_contains(bottom));
    EXPECT_FALSE(stack.guard_contains(as_bytes(stack.top()) - 1));
    // An empty Stack guards nothing.
    EXPECT_FALSE(fib::Stack().guard_contains(bottom - 1));
}

// Under ASan the sanitizer's own SIGSEGV handler would report and exit(1); the
// default action restores what a lesson-1 program does: die by the signal.
void write_with_default_sigsegv(char* address) {
    std::signal(SIGSEGV, SIG_DFL);
    *reinterpret_cast<volatile char*>(address) = 1;
}

TEST(L01_StackDeathTest, WritingIntoTheGuardPageIsKilledBySigsegv) {
    const fib::Stack stack(fib::Stack::kDefaultSize);
    char* const bottom = as_bytes(stack.bottom());
    EXPECT_EXIT(write_with_default_sigsegv(bottom - 1), testing::KilledBySignal(SIGSEGV), "");
    EXPECT_EXIT(write_with_default_sigsegv(bottom - fib::page_size()),
                testing::KilledBySignal(SIGSEGV), "");
}

// A frame bigger than a page jumps a one-page guard. Every page of the guard faults, down to
// its lowest: a write 16 KiB below the bottom, as such a frame makes, is killed at once.
TEST(L01_StackDeathTest, EveryPageOfTheGuardRegionFaultsDownToItsLowest) {
    const fib::Stack stack(fib::Stack::kDefaultSize);
    char* const bottom = as_bytes(stack.bottom());
    EXPECT_EXIT(write_with_default_sigsegv(bottom - 16 * 1024), testing::KilledBySignal(SIGSEGV), "");
    EXPECT_EXIT(write_with_default_sigsegv(bottom - fib::Stack::kGuardSize),
                testing::KilledBySignal(SIGSEGV), "");
}

TEST(L01_Stack, EveryUsableByteCanBeWrittenAndReadBack) {
    const fib::Stack stack(fib::Stack::kDefaultSize);
    auto* const bytes = static_cast<unsigned char*>(stack.bottom());
    // 251 is prime, so no page repeats the pattern at the same offsets.
    for (std::size_t i = 0; i < stack.size(); ++i) bytes[i] = static_cast<unsigned char>(i % 251);
    std::size_t wrong = 0;
    for (std::size_t i = 0; i < stack.size(); ++i) wrong += bytes[i] != i % 251;
    EXPECT_EQ(wrong, 0u);
}

TEST(L01_Stack, MoveConstructionTransfersTheMapping) {
    fib::Stack from(fib::Stack::kDefaultSize);
    void* const bottom = from.bottom();
    const std::size_t size = from.size();
    fib::Stack to(std::move(from));
    EXPECT_FALSE(from);
    EXPECT_EQ(from.size(), 0u);
    ASSERT_TRUE(to);
    EXPECT_EQ(to.bottom(), bottom);
    EXPECT_EQ(to.size(), size);
    EXPECT_TRUE(to.guard_contains(as_bytes(bottom) - 1));
}

TEST(L01_Stack, MoveAssignmentTransfersTheMappingAndUnmapsTheOldOne) {
    fib::Stack from(fib::Stack::kDefaultSize);
    fib::Stack to(fib::page_size());
    void* const moved_bottom = from.bottom();
    void* const old_bottom = to.bottom();
    to = std::move(from);
    EXPECT_FALSE(is_mapped(old_bottom));
    EXPECT_FALSE(from);
    EXPECT_EQ(from.size(), 0u);
    EXPECT_EQ(to.bottom(), moved_bottom);
    EXPECT_EQ(to.size(), fib::Stack::kDefaultSize);
    // Assigning a Stack to itself keeps it.
    fib::Stack& same = to;
    to = std::move(same);
    EXPECT_EQ(to.bottom(), moved_bottom);
}

TEST(L01_Stack, DestructorUnmapsTheUsablePagesAndTheGuard) {
    void* bottom = nullptr;
    {
        const fib::Stack stack(fib::Stack::kDefaultSize);
        bottom = stack.bottom();
        ASSERT_TRUE(is_mapped(bottom));
        ASSERT_TRUE(is_mapped(as_bytes(bottom) - 1));
    }
    EXPECT_FALSE(is_mapped(bottom));
    EXPECT_FALSE(is_mapped(as_bytes(bottom) - 1));
}

// ---- A context that uses most of its Stack ----------------------------------------------

constexpr std::size_t kFrameBytes = 1024;

// A context that recurses until three quarters of its stack are in use, then
// switches back. Every frame fills a buffer and checks it again on the way out,
// so frames that overlapped or were overwritten would show.
struct DeepRun {
    fib::Context main;
    fib::Context deep;
    fib::Stack stack{fib::Stack::kDefaultSize};
    const void* main_stack_bottom = nullptr;
    std::size_t main_stack_size = 0;
    void* main_fake_stack = nullptr;
    int depth_reached = 0;
    int intact_frames = 0;
    std::size_t bytes_used = 0;

    static int recurse(DeepRun& run, int depth) {
        volatile char buffer[kFrameBytes];
        for (auto& byte : buffer) byte = static_cast<char>(depth);
        // The real frame, even where ASan moves `buffer` to a fake stack.
        const char* const frame = static_cast<char*>(__builtin_frame_address(0));
        const std::size_t used = static_cast<std::size_t>(as_bytes(run.stack.top()) - frame);
        const int max_depth = static_cast<int>(run.stack.size() / kFrameBytes);
        int intact_below = 0;
        if (used < run.stack.size() / 4 * 3 && depth < max_depth) {
            intact_below = recurse(run, depth + 1);
        } else {
            run.depth_reached = depth;
            run.bytes_used = used;
        }
        bool intact = true;
        for (auto& byte : buffer) intact = intact && byte == static_cast<char>(depth);
        return intact_below + (intact ? 1 : 0);
    }

    static void entry(std::uintptr_t arg) {
        auto& run = *reinterpret_cast<DeepRun*>(arg);
        fib::sanitizer::finish_switch(nullptr, &run.main_stack_bottom, &run.main_stack_size);
        run.intact_frames = recurse(run, 1);
        fib::sanitizer::start_switch(nullptr, run.main_stack_bottom, run.main_stack_size);
        fib::sanitizer::tsan_switch_to(run.tsan_main);
        fib::switch_context(&run.deep, &run.main, 0);
    }

    // TSan's fibers: main's, and the deep context's.
    void* tsan_main = fib::sanitizer::tsan_current_fiber();
    void* tsan_deep = fib::sanitizer::tsan_create_fiber("deep");

    // Frames abandoned on the stack may still be poisoned for ASan (no-op without it).
    ~DeepRun() {
        ASAN_UNPOISON_MEMORY_REGION(stack.bottom(), stack.size());
        fib::sanitizer::tsan_destroy_fiber(tsan_deep);
    }
};

TEST(L01_Stack, AContextCanUseThreeQuartersOfItsStackAndSwitchBack) {
    DeepRun run;
    fib::prepare_context(run.deep, run.stack.top(), DeepRun::entry);
    fib::sanitizer::start_switch(&run.main_fake_stack, run.stack.bottom(), run.stack.size());
    fib::sanitizer::tsan_switch_to(run.tsan_deep);
    fib::switch_context(&run.main, &run.deep, reinterpret_cast<std::uintptr_t>(&run));
    fib::sanitizer::finish_switch(run.main_fake_stack, nullptr, nullptr);
    EXPECT_GE(run.bytes_used, run.stack.size() / 4 * 3);
    EXPECT_LT(run.bytes_used, run.stack.size());
    EXPECT_GT(run.depth_reached, 1);
    EXPECT_EQ(run.intact_frames, run.depth_reached);
}

}  // namespace
