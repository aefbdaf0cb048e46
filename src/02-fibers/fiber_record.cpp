// fiber_record.cpp — lesson 2: a fiber's record: carved from its stack, released with it, named.
#include "fib/fiber_record.hpp"

#include <cinttypes>
#include <cstdio>
#include <new>
#include <stdexcept>
#include <string>

#include "fib/fiber_manager.hpp"
#include "fib/sanitizer.hpp"

namespace fib {

// How many different starting offsets fibers' stacks take (see create_fiber).
constexpr std::uintptr_t kStagger = 8;

FiberRecord* FiberManager::create_fiber(const FiberOptions& options, std::size_t body_size,
                                        std::size_t body_align) {
    Stack stack = stacks_.take(options.stack_size);
    // Carve the record, then the callable, from the top of the stack (see
    // fiber_record.hpp); the fiber's frames start below the callable.
    // Each fiber starts a few cache lines lower than the one made before it
    // (kStagger, 8 steps of 64 bytes): carved alike, every record, callable and
    // frame would sit at the same offset in its page as the other fibers'. A
    // switch stores one fiber's registers and loads the next one's at those same
    // offsets, and a CPU that first matches a load to the stores before it by the
    // address's low 12 bits holds the loads back ("4K aliasing"). Lesson 2's
    // APPENDIX measures what the stagger saves on a yield.
    const auto top = reinterpret_cast<std::uintptr_t>(stack.top()) - (next_id_ % kStagger) * 64;
    const std::uintptr_t record_at = (top - sizeof(FiberRecord)) & ~(alignof(FiberRecord) - 1);
    const std::uintptr_t body_at = (record_at - body_size) & ~(body_align - 1);
    const auto bottom = reinterpret_cast<std::uintptr_t>(stack.bottom());
    if (body_at < bottom + stack.size() / 2) {
        stacks_.give_back(std::move(stack));
        throw std::length_error("fib: a fiber's callable of " + std::to_string(body_size) +
                                " bytes takes more than half of its stack");
    }
    auto* fiber = new (reinterpret_cast<void*>(record_at)) FiberRecord;
    fiber->manager = this;
    fiber->id = next_id_++;
    if (options.name) std::snprintf(fiber->name, sizeof fiber->name, "%s", options.name);
    fiber->body = reinterpret_cast<void*>(body_at);
    prepare_context(fiber->context, fiber->body, &FiberManager::fiber_main);
    fiber->asan_stack_bottom = stack.bottom();
    fiber->asan_stack_size = body_at - bottom;
    fiber->tsan_fiber = sanitizer::tsan_create_fiber(fiber->name);
    fiber->stack = std::move(stack);
    all_.push_back(fiber);
    return fiber;
}

// The record sits on the stack it describes: move the stack out, end the
// record's life, then pool the stack.
void FiberManager::release(FiberRecord* fiber) {
    all_.remove(fiber);
    sanitizer::tsan_destroy_fiber(fiber->tsan_fiber);
    Stack stack = std::move(fiber->stack);
    fiber->~FiberRecord();
    stacks_.give_back(std::move(stack));
}

FiberLabel label(const FiberRecord& fiber) {
    FiberLabel result;
    if (fiber.name[0] != '\0')
        std::snprintf(result.text, sizeof result.text, "fiber %" PRIu64 " (%s)", fiber.id,
                      fiber.name);
    else
        std::snprintf(result.text, sizeof result.text, "fiber %" PRIu64, fiber.id);
    return result;
}

}  // namespace fib
