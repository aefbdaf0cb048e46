// demo_timers.cpp — lesson 6 demo, part 2: timers, and waiting for the first of several things.
//
// Three fibers sleep for 30, 10 and 20 ms and wake in deadline order; a
// CondVar wait gives up after its timeout while another is notified; then one
// fiber waits three times on a pipe, an Event and a deadline at once, and each
// time learns which came first. Every line is decided by order, not by timing.
#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>
#include <thread>

#include "demo_parts.hpp"
#include "fib/event.hpp"
#include "fib/fiber.hpp"
#include "fib/timer.hpp"
#include "fib/wait_any.hpp"

using namespace std::chrono_literals;

namespace {

// Each deadline costs the Waiter at most one call to the kernel, which blocks
// until that deadline: three sleeps, three calls at most (fewer if the thread
// is late and finds two due at once), however long they last. No tick.
bool sleepers_wake_in_deadline_order(const fib::Waiter& waiter) {
    const std::uint64_t polls_before = waiter.stats().polls;
    std::string order;
    auto sleeper = [&](const char* name, std::chrono::milliseconds nap) {
        return fib::Fiber({.name = name}, [&order, name, nap] {
            fib::sleep_for(nap);
            order += order.empty() ? "" : ", ";
            order += name + std::string(" (") + std::to_string(nap.count()) + " ms)";
        });
    };
    fib::Fiber a = sleeper("a", 30ms), b = sleeper("b", 10ms), c = sleeper("c", 20ms);
    a.join(), b.join(), c.join();
    const std::uint64_t polls = waiter.stats().polls - polls_before;
    std::printf("timers: started a, b, c; they woke %s\n", order.c_str());
    std::printf("timers: the Waiter called the kernel %s\n",
                polls <= 3 ? "at most once per deadline: no tick" : "more often than deadlines: a tick?");
    return order == "b (10 ms), c (20 ms), a (30 ms)" && polls <= 3;
}

// "hasty" begins to wait first, but gives up after 20 ms: the notify sent at
// 40 ms goes to "patient", because hasty's timeout took it off the list.
bool condvar_waits_with_a_timeout() {
    fib::CondVar news;
    bool hasty_notified = true, patient_notified = false;
    fib::Fiber hasty({.name = "hasty"}, [&] { hasty_notified = fib::wait_for(news, 20ms).notified(); });
    fib::Fiber patient({.name = "patient"}, [&] { patient_notified = fib::wait_for(news, 1s).notified(); });
    fib::sleep_for(40ms);
    news.notify_one();
    hasty.join(), patient.join();
    std::printf("timers: wait_for: hasty (20 ms) -> %s; patient (1 s) -> %s, woken by the notify at 40 ms\n",
                hasty_notified ? "notified" : "timed out", patient_notified ? "notified" : "timed out");
    return !hasty_notified && patient_notified;
}

// One fiber waits for the first of a pipe, an Event and a 50 ms deadline,
// three times over; a different one comes first each time.
bool first_of_several() {
    int pipe_fds[2];
    if (::pipe2(pipe_fds, O_NONBLOCK | O_CLOEXEC) < 0) return false;
    fib::Event event;
    std::string seen;
    auto wait_first = [&](const char* who) {
        const fib::Ready ready = fib::wait_any({{pipe_fds[0], POLLIN}, event}, 50ms);
        char byte;
        if (ready.index == 0 && ::read(pipe_fds[0], &byte, 1) != 1) return;
        if (ready.index == 1) event.try_wait();
        const char* first = ready.timed_out() ? "the 50 ms timeout" : ready.index == 0 ? "the pipe" : "the Event";
        std::printf("wait_any: %-27s -> %s came first\n", who, first);
        seen += ready.timed_out() ? 't' : static_cast<char>('0' + ready.index);
    };
    std::thread setter([&] { event.set(); });
    wait_first("a thread sets the Event:");
    setter.join();
    fib::Fiber writer([&] { [[maybe_unused]] ssize_t n = ::write(pipe_fds[1], "x", 1); });
    wait_first("a fiber writes to the pipe:");
    writer.join();
    wait_first("nobody does anything:");
    ::close(pipe_fds[0]);
    ::close(pipe_fds[1]);
    return seen == "10t";
}

}  // namespace

bool timers_demo() {
    fib::FiberManager manager;
    fib::Waiter waiter;
    const bool sleeps_ok = sleepers_wake_in_deadline_order(waiter);
    const bool condvar_ok = condvar_waits_with_a_timeout();
    return sleeps_ok && condvar_ok && first_of_several();
}
