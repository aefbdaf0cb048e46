// fiber_record.hpp — lesson 6: lesson 2's FiberRecord, which also knows whether its fiber was cancelled.
//
// Replaces lesson 2's fiber_record.hpp from stage 6 on, adding
// cancel_requested and cancel_hook (see cancel.hpp).
//
// A fiber's record lives at the very top of its own stack, just above the
// callable it runs (as Boost.Context keeps its control block), so spawning a
// fiber allocates nothing beyond taking a stack from the pool:
//
//   top()  +-----------------+
//          | FiberRecord     |  context, state, links, name, ...
//          +-----------------+  <- record
//          | the callable    |  the lambda or function object, with its arguments
//          +-----------------+  <- body
//          | frames          |  the stack grows down from here
//          :                 :
//          +-----------------+  <- bottom()
//          | guard page      |
//
// The main fiber (the thread's own code) has a record inside the manager and
// no Stack of ours.
#pragma once

#include <cstddef>
#include <cstdint>
#include <exception>

#include "fib/context.hpp"
#include "fib/exception_state.hpp"
#include "fib/intrusive_list.hpp"
#include "fib/stack.hpp"

namespace fib {

class FiberManager;

enum class FiberState : std::uint8_t { Ready, Running, Blocked, Finished };

// What a blocked fiber is waiting for, kept for the deadlock report.
struct WaitSite {
    const char* what = nullptr;              // "join", "wait_for_all", ...
    const struct FiberRecord* fiber = nullptr;  // the fiber waited for, if any
    const void* object = nullptr;            // the object waited on, if any
};

// While a fiber is parked in a wait that a cancel may end: how to take it off
// whatever it waits on (a CondVar's list, say) before the cancel wakes it.
// Kept in the waiting fiber's frame; see CancelScope in cancel.hpp.
struct CancelHook {
    void (*undo)(void* context) = nullptr;  // nullptr: waking the fiber is enough
    void* context = nullptr;
};

struct FiberRecord {
    Context context;               // saved registers while not running
    FiberManager* manager = nullptr;
    std::uint64_t id = 0;          // 0 is main; spawned fibers count up from 1
    char name[32] = {};            // optional, for messages
    FiberState state = FiberState::Ready;
    bool detached = false;

    ListLink<FiberRecord> queue_link;  // in the ready queue while Ready; free while Blocked
    ListLink<FiberRecord> all_link;    // in the manager's list of every record
    FiberRecord* joiner = nullptr;     // the fiber blocked in join() on this one
    WaitSite waiting_for;              // set while Blocked
    bool cancel_requested = false;     // cancel() was called; it stays so
    const CancelHook* cancel_hook = nullptr;  // set while in a wait a cancel may end

    // The callable, stored just below this record; `run_body` invokes it once
    // and destroys it. An exception it lets escape is kept for join().
    void* body = nullptr;
    void (*run_body)(void* body) = nullptr;
    std::exception_ptr exception;

    ExceptionState exceptions;  // this fiber's copy while it is not running
    Stack stack;                // empty for main

    // AddressSanitizer's view of this fiber's stack (unused in normal builds).
    void* asan_fake_stack = nullptr;
    const void* asan_stack_bottom = nullptr;
    std::size_t asan_stack_size = 0;
};

// "fiber 3 (producer)", or "fiber 3" when it has no name: how every message
// names a fiber.
struct FiberLabel {
    char text[64];
};
FiberLabel label(const FiberRecord& fiber);

}  // namespace fib
