// main.cpp — lesson 6 demo: an Event set by another thread; then timers and wait_any
// (demo_timers.cpp), cancellation (demo_cancel.cpp) and the chat (demo_chat.cpp).
//
// A worker thread adds up numbers while fibers run; a fiber waiting on an
// Event wakes when the worker sets it, through the Waiter.
#include <atomic>
#include <cstdio>
#include <thread>

#include "demo_parts.hpp"
#include "fib/event.hpp"
#include "fib/fiber.hpp"
#include "fib/waiter.hpp"

// A worker thread computes; the fiber that needs the result waits on an Event,
// while another fiber goes on with its own work.
bool event_demo() {
    fib::FiberManager manager;
    fib::Waiter waiter;
    fib::Event done;
    std::atomic<long long> sum{0};
    std::thread worker([&] {
        long long total = 0;
        for (long long i = 1; i <= 1'000'000; ++i) total += i;
        sum.store(total, std::memory_order_release);
        done.set();  // the only thing the worker does to the fiber world
    });
    fib::Fiber consumer({.name = "consumer"}, [&] {
        done.wait();
        std::printf("event: the consumer fiber woke with the worker thread's sum, %lld\n",
                    sum.load(std::memory_order_acquire));
    });
    int turns = 0;
    fib::Fiber busy({.name = "busy"}, [&] {
        for (; turns < 1000; ++turns) fib::this_fiber::yield();
    });
    busy.join();
    consumer.join();
    worker.join();
    std::printf("event: meanwhile another fiber took its %d turns\n", turns);
    return sum == 500'000'500'000LL;
}

int main() {
    const bool event_ok = event_demo();
    const bool timers_ok = timers_demo();
    const bool cancel_ok = cancel_demo();
    const bool chat_ok = chat_demo();
    return event_ok && timers_ok && cancel_ok && chat_ok ? 0 : 1;
}
