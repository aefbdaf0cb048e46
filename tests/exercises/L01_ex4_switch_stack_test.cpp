// L01_ex4_switch_stack_test.cpp — lesson 1, exercise 4: switch_stack and prepare_stack
// (lessons/01-context-switch/exercises/ex4_switch_stack/).
#include <gtest/gtest.h>

#include <cfenv>
#include <cstdint>
#include <vector>

#include "fib/sanitizer.hpp"
#include "fib/stack.hpp"
#include "switch_stack.hpp"

// probe_stack_switch(from, to, arg, seen): loads 1..5 into rbx, r12-r15, switches with
// switch_stack, and once switched back stores what those registers hold into seen[0..4].
// It saves and restores the registers itself, as its own caller expects.
asm(R"(
    .text
    .globl  probe_stack_switch
    .type   probe_stack_switch, @function
probe_stack_switch:
    pushq   %rbx
    pushq   %r12
    pushq   %r13
    pushq   %r14
    pushq   %r15
    pushq   %rcx
    movq    $1, %rbx
    movq    $2, %r12
    movq    $3, %r13
    movq    $4, %r14
    movq    $5, %r15
    call    switch_stack
    popq    %rcx
    movq    %rbx, 0(%rcx)
    movq    %r12, 8(%rcx)
    movq    %r13, 16(%rcx)
    movq    %r14, 24(%rcx)
    movq    %r15, 32(%rcx)
    popq    %r15
    popq    %r14
    popq    %r13
    popq    %r12
    popq    %rbx
    ret
    .size   probe_stack_switch, .-probe_stack_switch
)");
extern "C" void probe_stack_switch(void** from_rsp, void* to_rsp, std::uintptr_t arg,
                                   std::uint64_t seen[5]);

namespace {

// main and one fresh context on a stack of its own, taking turns through switch_stack.
// Each switch is bracketed for AddressSanitizer (a no-op in other builds).
struct Turns {
    fib::Stack stack{fib::Stack::kDefaultSize};
    void* main_rsp = nullptr;
    void* context_rsp = nullptr;
    void* main_fake = nullptr;
    void* context_fake = nullptr;
    fib::sanitizer::StackRecord main_stack = fib::sanitizer::record_of_this_thread();
    std::vector<std::uintptr_t> log;  // what the context did, in order
    const void* entry_frame = nullptr;
    bool clobber = false;  // the context trashes rbx, r12-r15 before each switch back

    explicit Turns(fib::ContextEntry entry) : context_rsp(prepare_stack(stack.top(), entry)) {}

    // main -> context, until it switches back.
    void resume(std::uint64_t* seen = nullptr) {
        const auto self = reinterpret_cast<std::uintptr_t>(this);
        fib::sanitizer::start_switch(&main_fake, stack.bottom(), stack.size());
        if (seen)
            probe_stack_switch(&main_rsp, context_rsp, self, seen);
        else
            switch_stack(&main_rsp, context_rsp, self);
        fib::sanitizer::finish_switch(main_fake, nullptr, nullptr);
    }
    // context -> main, until main resumes it.
    void back() {
        fib::sanitizer::start_switch(&context_fake, main_stack.bottom, main_stack.size);
        if (clobber)
            asm volatile("movq $-1, %%rbx; movq $-1, %%r12; movq $-1, %%r13; movq $-1, %%r14; "
                         "movq $-1, %%r15" ::: "rbx", "r12", "r13", "r14", "r15");
        switch_stack(&context_rsp, main_rsp, 0);
        fib::sanitizer::finish_switch(context_fake, nullptr, nullptr);
    }
};

// The context: logs its argument once, then a count, one per turn, forever.
void take_turns(std::uintptr_t arg) {
    fib::sanitizer::finish_switch(nullptr, nullptr, nullptr);
    Turns& turns = *reinterpret_cast<Turns*>(arg);
    turns.entry_frame = __builtin_frame_address(0);
    turns.log.push_back(arg);
    for (std::uintptr_t turn = 1;; ++turn) {
        turns.back();
        turns.log.push_back(turn);
    }
}

// The context: sets round-toward-zero for itself, then takes turns.
void round_toward_zero(std::uintptr_t arg) {
    fib::sanitizer::finish_switch(nullptr, nullptr, nullptr);
    Turns& turns = *reinterpret_cast<Turns*>(arg);
    std::fesetround(FE_TOWARDZERO);
    for (;;) {
        turns.back();
        turns.log.push_back(static_cast<std::uintptr_t>(std::fegetround()));
    }
}

}  // namespace

TEST(L01_Ex4SwitchStack, ArgArrivesInTheEntryFunctionAndTheContextsTakeTurns) {
    Turns turns(take_turns);
    for (int i = 0; i < 1000; ++i) turns.resume();
    ASSERT_EQ(turns.log.size(), 1000u);
    EXPECT_EQ(turns.log[0], reinterpret_cast<std::uintptr_t>(&turns));
    for (std::uintptr_t i = 1; i < 1000; ++i) ASSERT_EQ(turns.log[i], i);
}

// At a function's first instruction (rsp + 8) % 16 == 0, so its frame pointer, pushed
// there, is a multiple of 16.
TEST(L01_Ex4SwitchStack, TheEntryFunctionStartsWithTheStackAlignedAsTheAbiSays) {
    Turns turns(take_turns);
    turns.resume();
    ASSERT_NE(turns.entry_frame, nullptr);
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(turns.entry_frame) % 16, 0u);
    const char* frame = static_cast<const char*>(turns.entry_frame);
    EXPECT_TRUE(frame > static_cast<const char*>(turns.stack.bottom()) &&
                frame < static_cast<const char*>(turns.stack.top()));
}

TEST(L01_Ex4SwitchStack, CalleeSavedRegistersSurviveAContextThatClobbersThem) {
    Turns turns(take_turns);
    turns.clobber = true;
    turns.resume();  // the context starts, and clobbers on its way back
    std::uint64_t seen[5] = {};
    turns.resume(seen);
    EXPECT_EQ(seen[0], 1u);
    EXPECT_EQ(seen[1], 2u);
    EXPECT_EQ(seen[2], 3u);
    EXPECT_EQ(seen[3], 4u);
    EXPECT_EQ(seen[4], 5u);
}

TEST(L01_Ex4SwitchStack, EachContextKeepsItsOwnRoundingMode) {
    ASSERT_EQ(std::fegetround(), FE_TONEAREST);
    Turns turns(round_toward_zero);
    for (int i = 0; i < 3; ++i) {
        turns.resume();
        EXPECT_EQ(std::fegetround(), FE_TONEAREST);  // main's own
    }
    ASSERT_EQ(turns.log.size(), 2u);
    EXPECT_EQ(turns.log[0], static_cast<std::uintptr_t>(FE_TOWARDZERO));  // the context's own
    EXPECT_EQ(turns.log[1], static_cast<std::uintptr_t>(FE_TOWARDZERO));
}
