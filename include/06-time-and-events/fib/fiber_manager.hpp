// fiber_manager.hpp — lesson 6: the FiberManager of lessons 2 and 4, which can also cancel a fiber.
//
// Replaces lesson 4's fiber_manager.hpp from stage 6 on, adding cancel() (see
// cancel.hpp). Lesson 4 added waiter() and set_waiter(): the I/O helpers find
// the thread's Waiter through the manager, so the manager stays the one thing
// the scheduler keeps per thread.
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
#include "fib/trace.hpp"

namespace fib {

class Waiter;  // waiter.hpp

struct FiberOptions {
    const char* name = nullptr;  // shown in messages; copied, truncated to 31 bytes
    std::size_t stack_size = Stack::kDefaultSize;
};

struct ManagerStats {
    std::uint64_t spawned = 0;       // fibers ever started (main not counted)
    std::uint64_t finished = 0;      // of those, the ones whose function has ended
    std::uint64_t switches = 0;      // context switches made
    std::size_t records = 0;         // fiber records not yet released (main not counted)
    std::size_t stacks_created = 0;  // stacks ever mapped
    std::size_t stacks_pooled = 0;   // stacks waiting in the pool
    std::size_t stacks_trimmed = 0;  // times a pooled stack gave its pages back
};

class FiberManager {
public:
    FiberManager();
    ~FiberManager();
    FiberManager(const FiberManager&) = delete;
    FiberManager& operator=(const FiberManager&) = delete;

    // The manager of the calling thread, or nullptr.
    static FiberManager* current() noexcept;
    // The manager of the calling thread; with none, stops the program with
    // "`what` on a thread with no FiberManager; create one first".
    static FiberManager& of_this_thread(const char* what);

    // Let every other ready fiber run once, then continue. A no-op when no other
    // fiber is ready. Under FIB_SCHEDULE_SEED (shuffle.hpp) the next fiber is a
    // seeded pick from the ready queue instead, so no order is promised.
    void yield();
    // From main: return once every spawned fiber, detached or not, has finished.
    void wait_for_all();

    FiberRecord* running() const { return running_; }
    std::size_t ready_count() const { return ready_.size(); }
    // The id (gettid) of this manager's thread; and whether `manager`, on thread
    // `thread_id`, is alive still (a pointer alone cannot say: a later manager may
    // have its address). From any thread.
    int thread_id() const { return thread_id_; }
    static bool alive(const FiberManager* manager, int thread_id);
    ManagerStats stats() const;

    // Tracing (trace.hpp): null unless FIB_TRACE is set. A layer above can mark
    // a span of the running fiber's work (what it waits in, say) on its track.
    void trace_begin(const char* what, const char* arg_name, std::int64_t arg) {
        if (trace_) [[unlikely]] trace_->begin(*running_, what, arg_name, arg);
    }
    void trace_end(const char* result_name, std::int64_t result) {
        if (trace_) [[unlikely]] trace_->end_span(*running_, result_name, result);
    }

    // Blocking, for join() and for any synchronisation built on top. A wait
    // begins with a token (fiber_record.hpp), handed to whoever will wake it;
    // park() blocks the running fiber until a wake with that token, and `site`
    // says what it waits for, for the deadlock report:
    //
    //   ParkToken me = manager.begin_wait();   // every earlier token is stale now
    //   register(me);                          // where the waker will find it
    //   while (!done) manager.park(me, site);  // a wait may park again, same token
    //   ...                                    // the waker, later: manager.wake(me)
    //
    // wake() queues the fiber if it is parked under that token and returns
    // whether it did: a stale token, or a fiber already woken, changes nothing.
    // Wake order is FIFO through the ready queue. parked() asks without waking.
    ParkToken begin_wait() { return {running_, ++running_->waits}; }
    void park(ParkToken token, WaitSite site);
    bool wake(ParkToken token);
    static bool parked(ParkToken token) {
        return token.fiber && token.fiber->state == FiberState::Blocked && token.fiber->waits == token.wait;
    }
    // Asks `fiber` to give up its current wait, or its next one (see cancel.hpp).
    void cancel(FiberRecord* fiber);

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

    // The Waiter of this thread, or nullptr; the Waiter sets itself here.
    Waiter* waiter() const { return waiter_; }
    void set_waiter(Waiter* waiter) { waiter_ = waiter; }

private:
    static void fiber_main(std::uintptr_t arg);  // every fiber starts here
    [[noreturn]] void exit_running();
    void switch_to(FiberRecord* next);
    void finish_switch();
    FiberRecord* next_or_deadlock();
    FiberRecord* take_next();      // the ready queue's front, or a seeded pick
    FiberRecord* take_shuffled();  // the seeded pick (shuffle.cpp)
    void release(FiberRecord* fiber);
    [[noreturn]] void report_escaped_exception(const FiberRecord& fiber);
    void enlist();  // into registry_, and back out
    void delist();

    // The manager of this thread: the one thing the scheduler keeps per thread.
    static thread_local FiberManager* current_;
    // Every live manager, each with its thread's id: a root for debuggers (registry.cpp).
    ListLink<FiberManager> registry_link_;
    int thread_id_ = 0;  // gettid()
    static IntrusiveList<FiberManager, &FiberManager::registry_link_> registry_;

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
    Trace* trace_ = nullptr;  // null unless FIB_TRACE is set (trace.hpp)
    ParkToken main_waits_for_all_;    // main, parked in wait_for_all()
    bool shuffled_ = false;               // FIB_SCHEDULE_SEED is set (shuffle.hpp)
    std::uint64_t shuffle_state_ = 0;     // the seeded sequence's state
    OverflowGuard overflow_guard_;  // reports a fiber overflowing its stack
    Waiter* waiter_ = nullptr;
};

namespace this_fiber {
void yield();             // FiberManager::current()->yield(), with a clear error outside one
std::uint64_t id();       // 0 for main
const char* name();       // "" when unnamed
bool cancelled();         // cancel() was asked for the running fiber (see cancel.hpp)
}  // namespace this_fiber

}  // namespace fib
