// L06_timer_bench.cpp — make bench, lesson 6: what a deadline and an Event's wake-ups cost.
//
//   timer_add_cancel  add a Timer to a heap already holding 10,000 others, then cancel
//                     it (a wait that ends before its deadline): ns per add + cancel
//   event_pingpong    a thread and a fiber handing a turn back and forth through two
//                     Events: ns per one-way hand-off (an eventfd write, the Waiter's
//                     epoll_wait or poll, a read), next to two threads on a futex
//   event_pingpong_fibers  two fibers of one thread doing the same: a same-thread
//                     set() wakes the other fiber directly, no system call; next to
//                     lesson 3's condvar_pingpong
#include <poll.h>

#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

#include "bench.hpp"
#include "fib/event.hpp"
#include "fib/fiber.hpp"
#include "fib/timer.hpp"

namespace bench {
namespace {

constexpr long kOtherTimers = 10'000;

Summary add_cancel_each(long operations) {
    fib::FiberManager manager;
    fib::Waiter waiter;
    fib::TimerHeap& heap = fib::TimerHeap::of_this_thread();
    const fib::Clock::time_point far = fib::Clock::now() + std::chrono::hours(1);
    std::vector<fib::Timer> others(kOtherTimers, fib::Timer{far, manager.begin_wait()});
    for (long i = 0; i < kOtherTimers; ++i) {
        others[i].deadline = far + std::chrono::milliseconds(i * 7919 % kOtherTimers);
        heap.add(others[i]);
    }
    const Summary summary = ns_per_op(operations, [&](long count) {
        fib::Timer timer{far, manager.begin_wait()};
        for (long i = 0; i < count; ++i) {
            timer.deadline = far + std::chrono::milliseconds(i * 104729 % kOtherTimers);
            heap.add(timer);
            heap.cancel(timer);
        }
    });
    for (fib::Timer& timer : others) heap.cancel(timer);
    return summary;
}

// `ping` is the fiber's to set and the thread's to wait on; `pong` the other way.
// The thread waits in poll(2) on ping's eventfd, as a thread with no Waiter
// would, so the fiber sets ping through the eventfd.
Summary event_handoff(long operations) {
    fib::FiberManager manager;
    fib::Waiter waiter;
    fib::Event ping, pong;
    std::atomic<bool> done{false};
    std::thread partner([&] {
        pollfd readable{ping.fd(), POLLIN, 0};
        for (;;) {
            ::poll(&readable, 1, -1);
            ping.try_wait();
            if (done.load()) return;
            pong.set();
        }
    });
    const Summary summary = ns_per_op(operations, [&](long count) {
        for (long i = 0; i < count / 2; ++i) {
            ping.set_through_eventfd();
            pong.wait();
        }
    });
    done.store(true);
    ping.set_through_eventfd();
    partner.join();
    return summary;
}

// Each fiber waits on its own Event and sets the other's.
Summary event_handoff_between_fibers(long operations) {
    fib::FiberManager manager;
    fib::Waiter waiter;
    return ns_per_op(operations, [](long count) {
        fib::Event ping, pong;
        fib::Fiber pinger([&] {
            for (long i = 0; i < count / 2; ++i) {
                pong.set();
                ping.wait();
            }
        });
        fib::Fiber ponger([&] {
            for (long i = 0; i < count / 2; ++i) {
                pong.wait();
                ping.set();
            }
        });
        pinger.join();
        ponger.join();
    });
}

void timer_costs(std::vector<Figure>& figures) {
    Figure timer{"timer_add_cancel", add_cancel_each(2'000'000)};
    timer.compared = std::to_string(kOtherTimers) + " other timers in the heap";
    timer.result_extra = " timers=" + std::to_string(kOtherTimers);
    Figure event{"event_pingpong", event_handoff(50'000)};
    if (const Figure* threads = find(figures, "thread_pingpong"))
        compare(event, "thread_pingpong", "thread_pingpong_ratio",
                event.value.median / threads->value.median);
    Figure fibers{"event_pingpong_fibers", event_handoff_between_fibers(2'000'000)};
    if (const Figure* condvar = find(figures, "condvar_pingpong"))
        compare(fibers, "condvar_pingpong", "condvar_pingpong_ratio",
                fibers.value.median / condvar->value.median);
    figures.push_back(timer);
    figures.push_back(event);
    figures.push_back(fibers);
}

[[maybe_unused]] const bool registered = add(Section{"timers", 6, false, timer_costs});

}  // namespace
}  // namespace bench
