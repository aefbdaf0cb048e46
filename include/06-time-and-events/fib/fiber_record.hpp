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

// One wait of one fiber, named so that a wake can say which wait it ends. A fiber
// begins each wait by taking a new token (FiberManager::begin_wait()) and hands
// it to whoever will wake it; wake() ends only the wait the token names. A wake
// that comes late, after the fiber has begun another wait, does nothing: a waker
// can never end a wait it was not part of.
struct ParkToken {
    struct FiberRecord* fiber = nullptr;
    std::uint64_t wait = 0;  // which of the fiber's waits: its `waits` count then
};

// While a fiber is parked in a wait that a cancel may end: how to take it off
// whatever it waits on (a CondVar's list, say) before the cancel wakes it.
// Kept in the waiting fiber's frame; see CancelScope in cancel.hpp.
struct CancelHook {
    void (*undo)(void* context) = nullptr;  // nullptr: waking the fiber is enough
    void* context = nullptr;
    ParkToken token;                         // the wait a cancel ends
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
    ParkToken joiner;                  // the fiber parked in join() on this one
    WaitSite waiting_for;              // set while Blocked
    const char* last_wait = nullptr;   // waiting_for.what of its last wait, kept after the wake
    std::uint64_t waits = 0;           // waits begun: the current (or last) wait's number
    // Set while the fiber runs code that must not park it (code run on it for
    // others, which a park would leave half done): park() calls it first, and
    // it stops the program if the wait may not go on. `on_park_context` is for it.
    void (*on_park)(const FiberRecord& fiber, const WaitSite& site, void* context) = nullptr;
    void* on_park_context = nullptr;
    bool cancel_requested = false;     // cancel() was called; it stays so
    std::uint32_t cancel_shields = 0;  // CancelShields open: until they close, a cancel waits
    const CancelHook* cancel_hook = nullptr;  // set while in a wait a cancel may end

    // The callable, stored just below this record; `run_body` invokes it once
    // and destroys it. An exception it lets escape is kept for join().
    void* body = nullptr;
    void (*run_body)(void* body) = nullptr;
    std::exception_ptr exception;

    ExceptionState exceptions;  // this fiber's copy while it is not running
    Stack stack;                // empty for main

    // AddressSanitizer's view of this fiber's stack, and ThreadSanitizer's
    // fiber (unused in normal builds; see sanitizer.hpp).
    void* asan_fake_stack = nullptr;
    const void* asan_stack_bottom = nullptr;
    std::size_t asan_stack_size = 0;
    void* tsan_fiber = nullptr;
};

// "fiber 3 (producer)", or "fiber 3" when it has no name: how every message
// names a fiber.
struct FiberLabel {
    char text[64];
};
FiberLabel label(const FiberRecord& fiber);

}  // namespace fib
