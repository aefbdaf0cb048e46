// fiber_manager.hpp — lesson 2: the single-threaded scheduler that runs fibers in turn.
//
// Creating a FiberManager adopts the calling thread: the code already running
// (usually main) becomes fiber 0, "main", and can spawn, yield and join like any
// other fiber. There is no separate scheduler loop: a fiber that yields or
// blocks switches straight to the next fiber in the FIFO ready queue.
//
//   ready queue:  [fiber 2] -> [fiber 5] -> [main]      running: fiber 1
//   fiber 1 yields:   push fiber 1 at the back, pop fiber 2, switch 1 -> 2
//
// Destroying the manager first waits for every fiber to finish.
// Single-threaded: a manager and its fibers belong to the thread that made it.
#pragma once

#include <cstddef>
#include <cstdint>

#include "fib/exception_state.hpp"
#include "fib/fiber_record.hpp"
#include "fib/intrusive_list.hpp"
#include "fib/overflow_guard.hpp"
#include "fib/stack_pool.hpp"

namespace fib {

class Waiter;  // lesson 4

struct FiberOptions {
    const char* name = nullptr;  // shown in messages; copied, truncated to 31 bytes
    std::size_t stack_size = Stack::kDefaultSize;
    // A service fiber works for the others (lesson 4's Waiter is one) and may
    // never end: spawned/finished and wait_for_all() do not count it.
    bool service = false;
};

// Extension point for lesson 6 (fiber-local storage). An environment gives
// fibers more than registers and a stack: it chooses the routine that switches
// (lesson 6's also loads the %fs and %gs base registers), fills in each new
// fiber's context, and runs code on the fiber as its function starts and ends.
// Lessons 2-5 install none, and fibers switch with switch_context.
class FiberEnvironment {
public:
    virtual void fiber_created(FiberRecord& fiber) = 0;   // before its first switch
    virtual void fiber_starting(FiberRecord& fiber) = 0;  // on the fiber, before its function
    virtual void fiber_ending(FiberRecord& fiber) = 0;    // on the fiber, after its function
    virtual void fiber_released(FiberRecord& fiber) = 0;  // its record is about to go

protected:
    ~FiberEnvironment() = default;
};
using SwitchRoutine = void (*)(Context* from, Context* to, std::uintptr_t arg);

struct ManagerStats {
    std::uint64_t spawned = 0;       // fibers ever started (main and service fibers not counted)
    std::uint64_t finished = 0;      // of those, the ones whose function has ended
    std::uint64_t switches = 0;      // context switches made
    std::size_t records = 0;         // fiber records not yet released (main not counted)
    std::size_t stacks_created = 0;  // stacks ever mapped
    std::size_t stacks_pooled = 0;   // stacks waiting in the pool
};

class FiberManager {
public:
    FiberManager();
    ~FiberManager();
    FiberManager(const FiberManager&) = delete;
    FiberManager& operator=(const FiberManager&) = delete;

    // The manager of the calling thread, or nullptr.
    static FiberManager* current() noexcept;

    // Let every other ready fiber run once, then continue. A no-op when no other
    // fiber is ready.
    void yield();
    // From main: return once every spawned fiber, detached or not, has finished.
    void wait_for_all();

    FiberRecord* running() const { return running_; }
    std::size_t ready_count() const { return ready_.size(); }
    ManagerStats stats() const;

    // Blocking, for the synchronisation built on top (join here, CondVar in
    // lesson 3): park() blocks the running fiber until some other fiber calls
    // wake() on it. Wake order is FIFO through the ready queue.
    void park(WaitSite site);
    void wake(FiberRecord* fiber);

    // The life of a fiber, used by Fiber (fiber.hpp). create_fiber takes a stack
    // and builds a record at its top, with `body_size` bytes for the callable.
    FiberRecord* create_fiber(const FiberOptions& options, std::size_t body_size,
                              std::size_t body_align);
    void start(FiberRecord* fiber);   // queue it; it runs when its turn comes
    void join(FiberRecord* fiber);    // wait for it, release it, rethrow its exception
    void detach(FiberRecord* fiber);  // release it when it finishes
    void abandon(FiberRecord* fiber); // release a created fiber that will never start

    // Prints every blocked fiber and what it waits for, then stops the program.
    [[noreturn]] void report_deadlock();

    // Install an environment and its switch routine (nullptr, switch_context:
    // none). Only from main, while no other fiber exists.
    void set_environment(FiberEnvironment* environment, SwitchRoutine routine);

    // Extension point for lesson 4: the Waiter of this thread lives here, so
    // that the manager pointer is the one thing the thread keeps in TLS.
    Waiter* waiter() const { return waiter_; }
    void set_waiter(Waiter* waiter) { waiter_ = waiter; }

private:
    static void fiber_main(std::uintptr_t arg);  // every fiber starts here
    [[noreturn]] void exit_running();
    void switch_to(FiberRecord* next);
    void finish_switch();
    FiberRecord* next_or_deadlock();
    void release(FiberRecord* fiber);
    // join()'s wait and the matching wake-up at the fiber's end; see
    // src/fiber_join.cpp, replaced from lesson 3 on by src/fiber_join_condvar.cpp.
    void wait_until_ended(FiberRecord* fiber);
    void notify_ended(FiberRecord* fiber);
    [[noreturn]] void report_escaped_exception(const FiberRecord& fiber);

    FiberRecord main_;                // the adopted thread's own code
    FiberRecord* running_ = &main_;
    FiberRecord* switched_from_ = nullptr;  // set across each switch
    FiberRecord* dead_ = nullptr;     // a finished detached fiber, released after the switch
    IntrusiveList<FiberRecord, &FiberRecord::queue_link> ready_;
    IntrusiveList<FiberRecord, &FiberRecord::all_link> all_;  // every unreleased record
    ExceptionState* thread_exceptions_;  // the runtime's per-thread struct
    StackPool stacks_;
    std::uint64_t next_id_ = 1;
    std::uint64_t spawned_ = 0;
    std::uint64_t finished_ = 0;
    std::uint64_t switches_ = 0;
    bool main_waits_for_all_ = false;
    OverflowGuard overflow_guard_;  // reports a fiber overflowing its stack
    FiberEnvironment* environment_ = nullptr;   // lesson 6
    SwitchRoutine switch_routine_ = &switch_context;
    Waiter* waiter_ = nullptr;                  // lesson 4
};

namespace this_fiber {
void yield();             // FiberManager::current()->yield(), with a clear error outside one
std::uint64_t id();       // 0 for main
const char* name();       // "" when unnamed
}  // namespace this_fiber

}  // namespace fib
