// fiber_lifecycle.cpp — lesson 2: a fiber's life: created on a pooled stack, started, joined or
// detached, released.
#include <cxxabi.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <new>
#include <stdexcept>
#include <string>

#include "fib/fatal.hpp"
#include "fib/fiber_manager.hpp"

namespace fib {

FiberRecord* FiberManager::create_fiber(const FiberOptions& options, std::size_t body_size,
                                        std::size_t body_align) {
    Stack stack = stacks_.take(options.stack_size);
    // Carve the record, then the callable, from the top of the stack (see
    // fiber_record.hpp); the fiber's frames start below the callable.
    const auto top = reinterpret_cast<std::uintptr_t>(stack.top());
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
    fiber->service = options.service;
    fiber->body = reinterpret_cast<void*>(body_at);
    prepare_context(fiber->context, fiber->body, &FiberManager::fiber_main);
    fiber->asan_stack_bottom = stack.bottom();
    fiber->asan_stack_size = body_at - bottom;
    fiber->stack = std::move(stack);
    all_.push_back(fiber);
    if (environment_) environment_->fiber_created(*fiber);
    return fiber;
}

void FiberManager::start(FiberRecord* fiber) {
    if (!fiber->service) ++spawned_;
    fiber->state = FiberState::Ready;
    ready_.push_back(fiber);
}

// The checks and the bookkeeping of join. How the joiner waits for the end is
// in src/fiber_join.cpp (lesson 2: park and wake) or, from lesson 3 on,
// src/fiber_join_condvar.cpp (a CondVar).
void FiberManager::join(FiberRecord* fiber) {
    FiberRecord* self = running_;
    if (fiber == self)
        fatal("%s joined itself; a fiber cannot wait for its own end", label(*self).text);
    if (fiber->joiner)
        fatal("%s tried to join %s, which %s is already joining", label(*self).text,
              label(*fiber).text, label(*fiber->joiner).text);
    fiber->joiner = self;
    wait_until_ended(fiber);
    std::exception_ptr exception = std::move(fiber->exception);
    release(fiber);
    if (exception) std::rethrow_exception(exception);
}

void FiberManager::detach(FiberRecord* fiber) {
    if (fiber->joiner)
        fatal("detach() on %s, which %s is joining", label(*fiber).text,
              label(*fiber->joiner).text);
    fiber->detached = true;
    if (fiber->state != FiberState::Finished) return;  // released when it ends
    if (fiber->exception) report_escaped_exception(*fiber);
    release(fiber);
}

void FiberManager::abandon(FiberRecord* fiber) { release(fiber); }

// The record sits on the stack it describes: move the stack out, end the
// record's life, then pool the stack.
void FiberManager::release(FiberRecord* fiber) {
    all_.remove(fiber);
    if (environment_) environment_->fiber_released(*fiber);
    Stack stack = std::move(fiber->stack);
    fiber->~FiberRecord();
    stacks_.give_back(std::move(stack));
}

// Nobody will ever join a detached fiber, so an exception escaping it has
// nowhere to go: say which fiber and what, and stop.
void FiberManager::report_escaped_exception(const FiberRecord& fiber) {
    try {
        std::rethrow_exception(fiber.exception);
    } catch (...) {
        int status = 0;
        const std::type_info* type = abi::__cxa_current_exception_type();
        char* type_name = abi::__cxa_demangle(type->name(), nullptr, nullptr, &status);
        const char* what = "";
        try {
            throw;
        } catch (const std::exception& error) {
            what = error.what();
        } catch (...) {
        }
        fatal("an exception of type %s escaped detached %s%s%s",
              type_name ? type_name : type->name(), label(fiber).text, *what ? ": " : "", what);
    }
}

namespace this_fiber {

void yield() {
    FiberManager* manager = FiberManager::current();
    if (!manager)
        fatal("this_fiber::yield() was called on a thread with no FiberManager; create one first");
    manager->yield();
}

std::uint64_t id() {
    FiberManager* manager = FiberManager::current();
    return manager ? manager->running()->id : 0;
}

const char* name() {
    FiberManager* manager = FiberManager::current();
    return manager ? manager->running()->name : "";
}

}  // namespace this_fiber
}  // namespace fib
