// offload.hpp — lesson 8: a fiber awaits blocking work that a ThreadPool runs.
//
//   fib::ThreadPool pool(4);
//   std::string page = fib::offload(pool, [&] { return download(url); });  // in a fiber
//
// offload() parks the calling fiber while a worker runs the callable; the fiber
// resumes on its own thread with the value, or with the callable's exception
// rethrown. The thread's other fibers run meanwhile. start() begins the work
// and returns at once, so a fiber can have several under way:
//
//   auto a = fib::start(pool, [] { return hash(part1); });
//   auto b = fib::start(pool, [] { return hash(part2); });
//   combine(a.get(), b.get());             // both: wait for each in turn
//   std::size_t first = fib::wait_first(a, b);   // or the first to finish
//
// How a result gets home. A fiber never leaves its thread: its stack, its TLS
// block and its Waiter registrations are that thread's. The worker posts the
// finished work into its home thread's Inbox (inbox.hpp): under a mutex, and
// with the Event (lesson 6) set only when the inbox was empty, one eventfd
// write per batch, however many results pile up. A drainer fiber on the home
// thread, which runs while offloads are under way, empties the inbox and wakes
// each waiting fiber; with nothing arrived it waits on the Event, so an idle
// thread sleeps in the Waiter's epoll_wait.
//
// A cancel (lesson 6), and what a callable may capture. A worker cannot be
// stopped in the middle of a call, and the callable's captures may point into
// the waiting fiber's frame (the `[&]` above), so the fiber must not leave
// that frame while the callable may still run. A cancel of a fiber in get()
// therefore gives the work up if no worker has taken it yet (it never runs),
// and otherwise waits, shielded, until the callable has returned; then get()
// throws fib::Cancelled (a std::system_error with ECANCELED) and the result is
// dropped when it arrives. An Offload destroyed without get() does the same.
// wait_first() returns at once on a cancel: its Offloads still hold the work.
// What the callable owns (its captures by value, its result) lives on the
// heap, and is destroyed on the home thread, after the work is done or given
// up: its destructor must not touch what it captured by reference.
//
// The callable runs on the worker's thread: its thread_locals and errno are the
// worker's, not the fiber's. On a pool's worker (no FiberManager there) start()
// runs the callable at once, inline: a worker never waits for the pool's queue,
// which could hold no free worker.
#pragma once

#include <atomic>
#include <cstddef>
#include <exception>
#include <memory>
#include <optional>
#include <span>
#include <type_traits>
#include <utility>
#include <variant>

#include "fib/fiber_record.hpp"
#include "fib/thread_pool.hpp"

namespace fib {

struct OffloadHome;  // a home thread's inbox, its Event and its drainer (offload.cpp)

// What a piece of work carries home; its home-thread fields are touched only there.
struct OffloadState {
    virtual ~OffloadState() = default;
    virtual void compute() noexcept = 0;  // on a worker: the callable, caught

    // Who has the work: still queued, taken by a worker, or given up by the
    // fiber (a cancel). The worker and the fiber race for it, once.
    enum Phase : int { kQueued, kRunning, kGivenUp };
    bool take() { return claim(kRunning); }    // a worker: run it?
    bool give_up() { return claim(kGivenUp); } // the fiber: it will never run?

    std::exception_ptr error;            // what the callable threw
    std::shared_ptr<OffloadHome> home;   // null when run inline on a worker
    bool done = false;                   // home thread: the result has arrived
    ParkToken waiter;                    // home thread: the wait of the fiber parked for it

private:
    bool claim(Phase to) {
        int queued = kQueued;
        return phase.compare_exchange_strong(queued, to, std::memory_order_acq_rel);
    }
    std::atomic<int> phase{kQueued};
};

// Counts since the program started, over every thread.
struct OffloadStats {
    std::size_t started = 0;    // pieces of work handed to a pool
    std::size_t posted = 0;     // results workers have put in an inbox
    std::size_t delivered = 0;  // results taken out of an inbox at home
    std::size_t wakeups = 0;    // eventfd writes: one per batch that found an empty inbox
};
OffloadStats offload_stats();

namespace detail {
template <typename R>
using Stored = std::conditional_t<std::is_void_v<R>, std::monostate, R>;

template <typename R, typename F>
struct OffloadTask final : OffloadState {
    explicit OffloadTask(F&& f) : function(std::move(f)) {}
    void compute() noexcept override {
        try {
            if constexpr (std::is_void_v<R>) {
                function();
                value.emplace();
            } else {
                value.emplace(function());
            }
        } catch (...) {
            error = std::current_exception();
        }
    }
    F function;
    std::optional<Stored<R>> value;
};

// offload.cpp: hand `state` to the pool (or run it inline on a worker); park
// the running fiber until the first of `states` is done; get()'s wait, and
// what a cancel or an abandoned Offload leaves (see above).
void begin(ThreadPool& pool, const std::shared_ptr<OffloadState>& state);
std::size_t wait_first(std::span<OffloadState* const> states, const char* what);
void wait_for_result(OffloadState& state, const char* what);
void settle(OffloadState& state, const char* what) noexcept;
[[noreturn]] void get_twice();
}  // namespace detail

// A piece of work under way; get() it once, from a fiber of the thread that started it.
template <typename R>
class Offload {
public:
    explicit Offload(std::shared_ptr<OffloadState> state, detail::Stored<R>* (*value)(OffloadState&))
        : state_(std::move(state)), value_(value) {}
    // Without get(): gives the work up, or waits for it to end (see above).
    ~Offload() {
        if (state_) detail::settle(*state_, "~Offload");
    }
    Offload(Offload&&) noexcept = default;
    Offload& operator=(Offload&& other) noexcept {
        if (this != &other) {
            if (state_) detail::settle(*state_, "Offload assigned over");
            state_ = std::move(other.state_);
            value_ = other.value_;
        }
        return *this;
    }

    // Parks until the work is done; its value, or its exception rethrown;
    // fib::Cancelled if the fiber is cancelled first (see above).
    R get() {
        if (!state_) detail::get_twice();
        const std::shared_ptr<OffloadState> state = std::move(state_);
        detail::wait_for_result(*state, "Offload::get");
        if (state->error) std::rethrow_exception(state->error);
        if constexpr (!std::is_void_v<R>) return std::move(*value_(*state));
    }
    bool done() const { return state_ && state_->done; }
    OffloadState* state() const { return state_.get(); }

private:
    std::shared_ptr<OffloadState> state_;
    detail::Stored<R>* (*value_)(OffloadState&);
};

// Starts `function()` on the pool and returns at once.
template <typename F>
auto start(ThreadPool& pool, F function) -> Offload<std::invoke_result_t<F&>> {
    using R = std::invoke_result_t<F&>;
    using Task = detail::OffloadTask<R, F>;
    auto state = std::make_shared<Task>(std::move(function));
    detail::begin(pool, state);
    return Offload<R>(std::move(state), [](OffloadState& s) { return &*static_cast<Task&>(s).value; });
}

// start(pool, function).get(): the calling fiber waits, the others run.
template <typename F>
auto offload(ThreadPool& pool, F function) -> std::invoke_result_t<F&> {
    return start(pool, std::move(function)).get();
}

// Parks until one of the offloads is done (returns at once if one is), and
// says which: the lowest index among those done. Their get() does not wait.
// A cancel ends it with fib::Cancelled; the Offloads still hold their work.
template <typename... R>
std::size_t wait_first(Offload<R>&... offloads) {
    OffloadState* const states[] = {offloads.state()...};
    return detail::wait_first(states, "wait_first");
}

}  // namespace fib
