// L01_coroutine.hpp — lesson 1 tests: a fresh context run as a coroutine of the test thread.
//
// The lesson-1 tests need to switch into a context and back many times, with
// every switch bracketed for AddressSanitizer and ThreadSanitizer as the
// lesson's demo does. This helper does exactly that and nothing more.
#pragma once

#include <sanitizer/asan_interface.h>

#include <cstdint>
#include <functional>
#include <utility>

#include "fib/context.hpp"
#include "fib/sanitizer.hpp"
#include "fib/stack.hpp"

// The register probe of tests/L01_probes.S, or tests/L01_probes_aarch64.S (see its contract there).
extern "C" void probe_switch_holding(fib::Context* self, fib::Context* other, std::uintptr_t arg,
                                     const fib::Context* load, fib::Context* seen);

namespace l01 {

// A fresh context on a Stack of its own, used as a coroutine of the test thread:
// resume() switches in, yield() (on the context) switches back to its caller.
// Every switch is bracketed for AddressSanitizer as in the lesson's demo.
struct Coroutine {
    // The register test switches through its probe, holding *load, recording into *seen.
    struct Probe {
        const fib::Context* load;
        fib::Context* seen;
    };
    fib::Stack stack{fib::Stack::kDefaultSize};
    fib::Context caller, self;
    std::function<void(Coroutine&)> body;
    // ASan's bookkeeping: the caller's stack (learned on arrival) and the fake frames.
    const void* caller_stack_bottom = nullptr;
    std::size_t caller_stack_size = 0;
    void* caller_fake_stack = nullptr;
    void* self_fake_stack = nullptr;
    // TSan's fibers: this context's, and its caller's (learned at each resume).
    void* tsan_self = fib::sanitizer::tsan_create_fiber("coroutine");
    void* tsan_caller = nullptr;

    // Start entry(arg) at a stack top `below_top` bytes under the Stack's top.
    explicit Coroutine(fib::ContextEntry entry, std::size_t below_top = 0) {
        fib::prepare_context(self, static_cast<char*>(stack.top()) - below_top, entry);
    }
    // Run body(*this); when it returns, switch back for good.
    explicit Coroutine(std::function<void(Coroutine&)> run, std::size_t below_top = 0)
        : Coroutine(run_body, below_top) {
        body = std::move(run);
    }
    // Frames abandoned on the stack may still be poisoned for ASan: clear them
    // before the pages go back to the kernel (a no-op without ASan).
    ~Coroutine() {
        ASAN_UNPOISON_MEMORY_REGION(stack.bottom(), stack.size());
        fib::sanitizer::tsan_destroy_fiber(tsan_self);
    }

    static void switch_between(fib::Context* from, fib::Context* to, std::uintptr_t arg,
                               const Probe* probe) {
        if (probe)
            probe_switch_holding(from, to, arg, probe->load, probe->seen);
        else
            fib::switch_context(from, to, arg);
    }
    void resume(std::uintptr_t arg, const Probe* probe = nullptr) {
        tsan_caller = fib::sanitizer::tsan_current_fiber();
        fib::sanitizer::start_switch(&caller_fake_stack, stack.bottom(), stack.size());
        fib::sanitizer::tsan_switch_to(tsan_self);
        switch_between(&caller, &self, arg, probe);
        fib::sanitizer::finish_switch(caller_fake_stack, nullptr, nullptr);
    }
    // `arg` reaches only a fresh context: run_body finds its Coroutine through it.
    void resume() { resume(reinterpret_cast<std::uintptr_t>(this)); }
    void yield(const Probe* probe = nullptr) {
        fib::sanitizer::start_switch(&self_fake_stack, caller_stack_bottom, caller_stack_size);
        fib::sanitizer::tsan_switch_to(tsan_caller);
        switch_between(&self, &caller, 0, probe);
        fib::sanitizer::finish_switch(self_fake_stack, nullptr, nullptr);
    }
    // The first thing a fresh context does: finish the hand-over, learn the caller's stack.
    void arrive() {
        fib::sanitizer::finish_switch(nullptr, &caller_stack_bottom, &caller_stack_size);
    }
    // This context never runs again: nullptr lets ASan free its fake frames at
    // once, so nothing after start_switch may touch them.
    [[noreturn]] void leave() {
        fib::sanitizer::start_switch(nullptr, caller_stack_bottom, caller_stack_size);
        fib::sanitizer::tsan_switch_to(tsan_caller);
        fib::switch_context(&self, &caller, 0);
        __builtin_unreachable();
    }
    static void run_body(std::uintptr_t arg) {
        auto& coroutine = *reinterpret_cast<Coroutine*>(arg);
        coroutine.arrive();
        coroutine.body(coroutine);
        coroutine.leave();
    }
};

}  // namespace l01
