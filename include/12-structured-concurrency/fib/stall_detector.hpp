// stall_detector.hpp — lesson 12: StallDetector, which reports a fiber that runs too long without switching.
//
// A fiber scheduler is cooperative: a fiber that computes for 200 ms without
// yielding or waiting holds up every other fiber of its thread for 200 ms, and
// nothing in the scheduler notices, since it does not run. Seastar's reactor
// stall report is the anchor: a timer on the thread's own CPU-time clock
// fires a signal every quarter of the threshold, and the handler compares the
// manager's switch count with the one it saw last time. Unchanged for a whole
// threshold of CPU time: the running fiber has not let go since, and is
// reported while it still runs, once per stall, with a backtrace of the
// spinning code:
//
//   fib: stall: fiber 3 (spinner) has run for 100 ms of CPU time without a switch (its last wait: sleep_for)
//   build/lesson12/tests(+0x5b2e1)[0x55d0c6a8e2e1]      <- the spinning code first
//   ...
//
// (`addr2line -f -C -e build/lesson12/tests 0x5b2e1` names a line.) CPU time,
// not wall time: a thread that other processes keep off the CPU, or that
// sleeps in epoll_wait, is not stalled. A fiber that never waited says "(it
// has not waited since its start)". What we know of a running fiber is only
// its last wait: wake() clears waiting_for and keeps the wait's name in the
// record's last_wait (lesson 2's fiber_record.hpp), read while the fiber
// runs; a yield since that wait is not recorded (it leaves no trace in the
// record). A yield with no other fiber ready is no switch either: the spin
// goes on, and stays one stall.
//
// What the signal handler may and may not do, and why, the choice of signal,
// and ThreadSanitizer's late delivery: stall_detector.cpp's opening comment.
//
// Off by default. FIB_STALL_MS=N in the environment gives every FiberManager
// of the process a detector with an N ms threshold, made with the manager and
// ended with it. From code or a test:
//
//   fib::FiberManager manager;
//   fib::StallDetector detector(manager, std::chrono::milliseconds(50));
//   ...                                   // detector.reports(): stalls seen
//
// Lifetime rules: a StallDetector is made and destroyed on its manager's thread
// and destroyed before the manager (else the manager stops the program, since
// the handler reads the manager). One per thread: while it lives, the
// environment's detector of that thread, if any, stands aside.
#pragma once

#include <signal.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <ctime>

#include "fib/fiber_manager.hpp"

namespace fib {

class StallDetector {
public:
    StallDetector(FiberManager& manager, std::chrono::milliseconds threshold);
    ~StallDetector();
    StallDetector(const StallDetector&) = delete;
    StallDetector& operator=(const StallDetector&) = delete;

    // Stalls this detector has reported. Read it from any fiber of its thread.
    std::uint64_t reports() const;

    // From stage 12 on, every FiberManager calls these as it is made and
    // destroyed (src/12-structured-concurrency/fiber_manager.cpp): with
    // FIB_STALL_MS set, the first makes the thread's detector, the second ends it.
    static void manager_created(FiberManager& manager);
    static void manager_ending(FiberManager& manager);

private:
    StallDetector(FiberManager& manager, std::chrono::milliseconds threshold, bool from_environment);
    static void install_handler();
    static void on_signal(int signal, siginfo_t* info, void* ucontext);
    void tick(const void* interrupted_at);                              // in the handler
    void report(const FiberRecord& fiber, const void* interrupted_at);  // in the handler
    void step_back_in();  // the thread's explicit detector is gone

    FiberManager& manager_;
    int thread_id_;                  // gettid() of the manager's thread
    bool from_environment_;
    std::uint64_t threshold_us_ = 0;
    std::uint64_t tick_us_ = 0;      // a quarter of the threshold
    std::size_t slot_ = 0;           // where the handler finds this detector
    std::uint64_t generation_ = 0;   // and how it knows a late signal
    timer_t timer_{};
    // The handler's own: between two ticks it compares what runs and the
    // switch count. Touched elsewhere only while standing aside.
    const FiberRecord* seen_running_ = nullptr;
    std::uint64_t seen_switches_ = 0;
    std::uint64_t quiet_us_ = 0;     // CPU time since a tick last saw a switch
    bool reported_ = false;          // this stall was reported
    std::atomic<bool> standing_aside_{false};  // an explicit detector watches this thread
    std::atomic<std::uint64_t> reports_{0};
};

// Stalls reported by every detector of the process, and the detectors alive.
std::uint64_t stall_reports();
std::size_t live_stall_detectors();

}  // namespace fib
