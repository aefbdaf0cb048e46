// offload.cpp — lesson 8: results carried home through an inbox, and the drainer fiber.
#include "fib/offload.hpp"

#include <pthread.h>

#include <atomic>
#include <cerrno>
#include <deque>
#include <system_error>

#include "fib/cancel.hpp"
#include "fib/event.hpp"
#include "fib/fatal.hpp"
#include "fib/fiber.hpp"
#include "fib/fiber_manager.hpp"
#include "fib/inbox.hpp"

namespace fib {

// One per thread that has offloaded, kept for the thread's life: its Inbox,
// and the drainer fiber that runs while offloads are under way. Workers touch
// only `inbox`, through post(); everything else is the home thread's. Kept,
// the Inbox's eventfd stays registered with the thread's Waiter from one
// offload to the next; made and unmade around each offload, as this lesson
// first did, a lone round trip paid four system calls more (the eventfd made
// and closed, its registration added and dropped: README, Measured).
struct OffloadHome {
    explicit OffloadHome(FiberManager* owner) : manager(owner) {}

    FiberManager* manager;
    Inbox<std::shared_ptr<OffloadState>> inbox;
    std::size_t outstanding = 0;  // started here and not yet taken out of the inbox
    bool draining = false;        // a drainer fiber runs
};

namespace {

std::atomic<std::size_t> started_total{0}, posted_total{0}, delivered_total{0}, wakeups_total{0};

// This thread's home. It ends on this thread, where the close of its eventfd
// tells the Waiter: at the thread's exit, or when a later FiberManager of the
// thread offloads (the earlier one's drainer ended with it, its work all home).
// A later manager at the same address finds the home as the last one left it:
// idle, its Event owned by that address on this thread, and serves it as well.
thread_local std::shared_ptr<OffloadHome> this_threads_home;

// After fork() the child's copy of the forking thread's home shares its eventfd
// with the parent (a read in one takes the other's wake-up), and its Inbox's
// mutex may have been held by a worker, a thread the child does not have. It
// is the child's neither to use nor to destroy: it is left unreachable, and a
// home of the child's own is made at its first offload.
void leave_home_in_child() {
    static_cast<void>(new std::shared_ptr<OffloadHome>(std::move(this_threads_home)));
}

// The job a worker runs: compute, unless the fiber gave the work up, then
// post the state home. The post is the worker's last touch of the home (the
// Inbox's protocol: everything under its mutex). The state it posts holds the
// home, and the drainer lets go of the state at home: so the home, and its
// eventfd, always end on the home thread, where the close tells the Waiter.
// (Closed on a worker, the number could come back as the next home's eventfd
// before the Waiter polled again, and the Waiter would trust a registration
// the kernel dropped with the old file: a drainer slept for ever, which a
// shuffled schedule found when homes were made per offload.)
struct OffloadJob final : Job {
    explicit OffloadJob(std::shared_ptr<OffloadState> s) : state(std::move(s)) {}
    void run() noexcept override {
        if (state->take()) state->compute();
        OffloadHome& home = *state->home;
        bool woke = false;
        if (!home.inbox.post(std::move(state), &woke)) fatal("an offload's home closed with its work under way");
        posted_total.fetch_add(1, std::memory_order_relaxed);
        if (woke) wakeups_total.fetch_add(1, std::memory_order_relaxed);
    }
    std::shared_ptr<OffloadState> state;
};

// Wakes the fiber waiting for `state`, if it still waits (a fiber waiting for
// the first of several is woken once, by the first).
void arrive(OffloadHome& home, OffloadState& state) {
    state.done = true;
    --home.outstanding;
    delivered_total.fetch_add(1, std::memory_order_relaxed);
    home.manager->wake(std::exchange(state.waiter, ParkToken{}));
}

// The drainer: runs on the home thread while offloads are under way. It waits
// on the inbox only when it found it empty, so a result posted after its look
// finds the eventfd written and the wait returns at once. It is shielded from
// cancels (lesson 6): work in flight will come home, and someone must take it.
// With none left it ends, and the next offload starts another: a thread with
// no work out has no drainer, and its FiberManager can finish.
void drain(std::shared_ptr<OffloadHome> home) {
    const CancelShield while_work_is_out;
    std::deque<std::shared_ptr<OffloadState>> arrived;
    while (home->outstanding > 0) {
        home->inbox.take_all(arrived);
        for (const std::shared_ptr<OffloadState>& state : arrived) arrive(*home, *state);
        if (arrived.empty()) home->inbox.wait();
        arrived.clear();  // the last references to abandoned work go here, at home
    }
    home->draining = false;
}

// The home of the calling thread, with a drainer running: made at the thread's
// first offload (and again under a later manager), its drainer started when
// none runs; a new drainer runs at the thread's next switch.
const std::shared_ptr<OffloadHome>& home_of(FiberManager& manager) {
    static const bool once = [] { return pthread_atfork(nullptr, nullptr, leave_home_in_child) == 0; }();
    if (!once) fatal("pthread_atfork failed for offload's homes");
    std::shared_ptr<OffloadHome>& home = this_threads_home;
    if (home && home->manager != &manager) home.reset();
    if (!home) home = std::make_shared<OffloadHome>(&manager);
    if (!home->draining) {
        Fiber({.name = "offload drainer"}, [home] { drain(home); }).detach();
        home->draining = true;
    }
    return home;
}

// A cancel takes the fiber off every state it waits for.
struct Waiting {
    std::span<OffloadState* const> states;
};
void forget_waiter(void* context) {
    for (OffloadState* state : static_cast<Waiting*>(context)->states) state->waiter = ParkToken{};
}

}  // namespace

OffloadStats offload_stats() {
    return {started_total.load(), posted_total.load(), delivered_total.load(), wakeups_total.load()};
}

namespace detail {

void begin(ThreadPool& pool, const std::shared_ptr<OffloadState>& state) {
    FiberManager* manager = FiberManager::current();
    if (!manager) {
        if (ThreadPool::of_this_thread() == nullptr)
            fatal("offload on a thread with neither a FiberManager nor a place in a ThreadPool: "
                  "create a FiberManager and a Waiter first");
        state->compute();  // a worker: run it here rather than wait for the queue
        state->done = true;
        return;
    }
    state->home = home_of(*manager);
    pool.submit(std::make_unique<OffloadJob>(state));
    // Counted once queued (a submit that throws leaves nothing to wait for); the
    // result cannot be drained before: the drainer runs on this thread.
    ++state->home->outstanding;
    started_total.fetch_add(1, std::memory_order_relaxed);
}

// Parks until one of `states` is done, looping on any wake that finds none
// done; a cancel ends it with Cancelled.
std::size_t wait_first(std::span<OffloadState* const> states, const char* what) {
    for (OffloadState* state : states)
        if (!state) fatal("%s on an Offload whose get() was already called", what);
    auto first_done = [&]() -> std::size_t {
        for (std::size_t i = 0; i < states.size(); ++i)
            if (states[i]->done) return i;
        return states.size();
    };
    std::size_t found = first_done();
    if (found < states.size()) return found;
    FiberManager& manager = FiberManager::of_this_thread(what);
    for (OffloadState* state : states) {
        if (state->home->manager != &manager)
            fatal("%s from another thread than the one that started the work: a fiber waits "
                  "only for its own thread's offloads", what);
        if (state->waiter.fiber)
            fatal("%s: %s waits for this work already", what, label(*state->waiter.fiber).text);
    }
    Waiting waiting{states};
    while ((found = first_done()) == states.size()) {
        if (this_fiber::cancelled()) throw Cancelled(what);
        const ParkToken me = manager.begin_wait();
        const CancelScope cancellable(me, forget_waiter, &waiting);
        for (OffloadState* state : states) state->waiter = me;
        manager.park(me, WaitSite{what, nullptr, states[0]});
        forget_waiter(&waiting);  // the first done woke it: leave the others
        if (cancellable.woke_it()) throw Cancelled(what);
    }
    return found;
}

// get()'s wait. A cancel leaves the work settled before the frame that may
// hold its captures goes: given up, or waited out.
void wait_for_result(OffloadState& state, const char* what) {
    OffloadState* const states[] = {&state};
    try {
        wait_first(states, what);
    } catch (const Cancelled&) {
        settle(state, what);
        throw;
    }
}

// The work is done, or no worker has taken it and it is given up (it will
// never run), or a worker runs it now: then wait for it, shielded, for the
// callable may be using this fiber's frame.
void settle(OffloadState& state, const char* what) noexcept {
    if (state.done || !state.home || state.give_up()) return;
    const CancelShield until_the_callable_returns;
    OffloadState* const states[] = {&state};
    wait_first(states, what);
}

void get_twice() { fatal("Offload::get() was called twice; the first took the result"); }

}  // namespace detail
}  // namespace fib
