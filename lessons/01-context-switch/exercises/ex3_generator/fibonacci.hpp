// fibonacci.hpp — lesson 1, exercise 3: a generator built on switch_context.
//
// Fibonacci hands out 0, 1, 1, 2, 3, 5, ... one number per next(). The numbers are
// made by a loop that runs in a context of its own, on `stack_`: next() switches
// into it, the loop stores the next number in `value_` and switches back. The
// loop's locals (the last two numbers) live on its own stack between calls.
#pragma once

#include <cstddef>
#include <cstdint>

#include "fib/context.hpp"
#include "fib/sanitizer.hpp"
#include "fib/stack.hpp"

class Fibonacci {
public:
    Fibonacci();
    Fibonacci(const Fibonacci&) = delete;  // the loop's context points at this object
    Fibonacci& operator=(const Fibonacci&) = delete;

    // The next number; the first call gives 0.
    std::uint64_t next();

    std::size_t made() const { return made_; }  // numbers the loop has made so far
    const void* loop_frame() const { return loop_frame_; }  // a local of the loop, as it made the last
    const fib::Stack& stack() const { return stack_; }

private:
    // The loop, entered with `self` (this Fibonacci) as its argument.
    static void produce(std::uintptr_t self);

    fib::Stack stack_{fib::Stack::kDefaultSize};
    fib::Context caller_;     // whoever called next(), while the loop runs
    fib::Context generator_;  // the loop, while it waits for the next call
    fib::sanitizer::StackRecord caller_asan_ = fib::sanitizer::record_of_this_thread();
    fib::sanitizer::StackRecord generator_asan_ = fib::sanitizer::record_of(stack_);
    std::uint64_t value_ = 0;  // the number the loop made last
    std::size_t made_ = 0;
    const void* loop_frame_ = nullptr;
};
