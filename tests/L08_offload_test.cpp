// L08_offload_test.cpp — lesson 8: offload, start, get and wait_first. Values and exceptions
// come home to the fiber's own thread; other fibers run meanwhile; 10,000 at once; results that
// race the drainer's sleep, and pile up into one wake-up; an idle thread sleeping in the kernel;
// a cancel that gives up queued work and waits for started work (and an Offload dropped without
// get()); several at once; the worker's own TLS, with and without a FiberTls; a pool destroyed
// with work in flight; nested offloads on a worker; a thread's home kept between offloads, made
// again under a later manager, and left alone by a forked child.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <system_error>
#include <thread>
#include <vector>

#include "L01_sanitizers.hpp"
#include "L04_waiter_harness.hpp"
#include "L02_schedule.hpp"
#include "L08_gate.hpp"
#include "fib/cancel.hpp"
#include "fib/fiber.hpp"
#include "fib/fiber_tls.hpp"
#include "fib/offload.hpp"
#include "fib/waiter.hpp"

using namespace std::chrono_literals;

namespace {

using l08::Gate;

struct Home {
    fib::FiberManager manager;
    fib::Waiter waiter;
};

}  // namespace

TEST(L08_Offload, TheValueComesBackToTheFibersOwnThreadFromAWorker) {
    Home home;
    fib::ThreadPool pool(2);
    std::thread::id ran_on, resumed_on;
    int got = 0;
    fib::Fiber fiber([&] {
        got = fib::offload(pool, [&] {
            ran_on = std::this_thread::get_id();
            return 42;
        });
        resumed_on = std::this_thread::get_id();
    });
    fiber.join();
    EXPECT_EQ(got, 42);
    EXPECT_NE(ran_on, std::this_thread::get_id());
    EXPECT_EQ(resumed_on, std::this_thread::get_id());
}

TEST(L08_Offload, TheCallablesExceptionIsRethrownOnTheFiberWithItsType) {
    Home home;
    fib::ThreadPool pool(1);
    std::string message;
    fib::Fiber fiber([&] {
        try {
            fib::offload(pool, []() -> int { throw std::out_of_range("no such page"); });
        } catch (const std::out_of_range& error) {
            message = error.what();
        }
    });
    fiber.join();
    EXPECT_EQ(message, "no such page");
}

TEST(L08_Offload, OtherFibersRunWhileOneAwaits) {
    Home home;
    fib::ThreadPool pool(1);
    Gate gate;
    std::vector<const char*> order;
    fib::Fiber awaiting([&] {
        fib::offload(pool, [&] {
            gate.wait();
            return 0;
        });
        order.push_back("awaited");
    });
    fib::Fiber other([&] {
        for (int i = 0; i < 3; ++i) fib::this_fiber::yield();
        order.push_back("other ran");
        gate.release();
    });
    awaiting.join();
    other.join();
    EXPECT_EQ(order, (std::vector<const char*>{"other ran", "awaited"}));
}

TEST(L08_Offload, TenThousandFibersAwaitAtOnceAndEachGetsItsOwnResult) {
    Home home;
    fib::ThreadPool pool(2);
    // ThreadSanitizer keeps a thread's worth of state per fiber: 10,000 at once exhaust it.
    constexpr int kFibers = UNDER_THREAD_SANITIZER ? 1000 : 10000;
    std::vector<long> got(kFibers, -1);
    std::vector<fib::Fiber> fibers;
    fibers.reserve(kFibers);
    for (int i = 0; i < kFibers; ++i)
        fibers.emplace_back([&got, &pool, i] { got[i] = fib::offload(pool, [i] { return long{i} * i; }); });
    for (fib::Fiber& fiber : fibers) fiber.join();
    for (int i = 0; i < kFibers; ++i) ASSERT_EQ(got[i], long{i} * i) << "fiber " << i;
}

// Each result races the drainer going to sleep: posted just before, during or after its look at
// the inbox. A lost wake-up would leave the fiber parked for good (the watchdog would say so).
// 20,000 results; 2,000 under TSan.
TEST(L08_Offload, TwentyThousandResultsRacingTheDrainersSleepAllArrive) {
    constexpr long kResults = fewer_under_thread_sanitizer(20'000);
    Home home;
    fib::ThreadPool pool(1);
    long sum = 0;
    fib::Fiber fiber([&] {
        for (long i = 0; i < kResults; ++i) sum += fib::offload(pool, [i] { return i; });
    });
    fiber.join();
    EXPECT_EQ(sum, kResults * (kResults - 1) / 2);
}

// The home thread is busy (it sleeps in a plain system call, not in its Waiter) while 1,000
// results arrive: the first finds the inbox empty and writes the eventfd; the rest only queue.
TEST(L08_Offload, ResultsThatPileUpWakeTheHomeThreadOncePerBatch) {
    Home home;
    fib::ThreadPool pool(2);
    constexpr int kWork = 1000;
    Gate gate;
    std::vector<fib::Offload<int>> work;
    for (int i = 0; i < kWork; ++i) work.push_back(fib::start(pool, [&gate, i] {
        gate.wait();
        return i;
    }));
    fib::this_fiber::yield();  // the drainer starts, finds nothing, and waits on its Event
    const fib::OffloadStats before = fib::offload_stats();
    gate.release();
    while (fib::offload_stats().posted - before.posted < kWork)
        std::this_thread::sleep_for(1ms);  // not draining: the results pile up
    long sum = 0;
    for (fib::Offload<int>& one : work) sum += one.get();
    const fib::OffloadStats after = fib::offload_stats();
    EXPECT_EQ(sum, long{kWork} * (kWork - 1) / 2);
    EXPECT_EQ(after.delivered - before.delivered, std::size_t{kWork});
    EXPECT_EQ(after.wakeups - before.wakeups, 1u);
}

TEST(L08_Offload, AThreadWhoseFibersAllAwaitSleepsInTheKernel) {
    Home home;
    fib::ThreadPool pool(1);
    const pid_t main_tid = ::gettid();
    bool seen = false;
    fib::offload(pool, [&] {
        for (int i = 0; i < 5000 && !seen; ++i) {
            seen = l04_waiter::in_system_call(main_tid);
            if (!seen) std::this_thread::sleep_for(1ms);
        }
        return 0;
    });
    EXPECT_TRUE(seen);
}

// The work has started when the fiber is cancelled, and the callable writes into the fiber's
// frame through its [&] capture: the fiber must not leave that frame (its stack goes back to
// the pool, for the next fiber) before the callable has returned. So its get() waits for the
// work, and only then throws Cancelled; the result is dropped.
TEST(L08_Offload, ACancelWaitsForWorkAlreadyStartedBeforeTheFrameGoes) {
    Home home;
    fib::ThreadPool pool(1);
    Gate gate;
    std::atomic<bool> started{false};
    const fib::OffloadStats before = fib::offload_stats();
    bool cancelled = false, written_while_alive = false, ended = false;
    fib::Fiber fiber([&] {
        int in_my_frame = 0;
        try {
            fib::offload(pool, [&] {
                started = true;
                started.notify_all();
                gate.wait();
                in_my_frame = 42;  // the frame must still be there
                return std::vector<char>(1 << 20, 'x');  // a result worth dropping properly
            });
        } catch (const fib::Cancelled& error) {
            cancelled = error.code() == std::errc::operation_canceled;
        }
        written_while_alive = in_my_frame == 42;
        ended = true;
    });
    while (!started.load()) fib::this_fiber::yield();  // a worker has taken it
    fiber.cancel();
    for (int i = 0; i < 20; ++i) fib::this_fiber::yield();
    EXPECT_FALSE(ended);  // still waiting for the work
    gate.release();
    fiber.join();
    EXPECT_TRUE(cancelled);
    EXPECT_TRUE(written_while_alive);
    const fib::OffloadStats after = fib::offload_stats();
    EXPECT_EQ(after.started - before.started, 1u);
    EXPECT_EQ(after.delivered - before.delivered, 1u);
}

// One worker, busy with other work: the cancelled fiber's work is still queued, so it is given
// up. It never runs, the fiber ends at once, and the job only carries it home.
TEST(L08_Offload, ACancelGivesUpWorkNoWorkerHasTakenAndItNeverRuns) {
    Home home;
    fib::ThreadPool pool(1);
    Gate gate;
    const fib::OffloadStats before = fib::offload_stats();
    auto busy = fib::start(pool, [&] {
        gate.wait();
        return 0;
    });
    bool ran = false, cancelled = false;
    fib::Fiber fiber([&] {
        try {
            fib::offload(pool, [&ran] {
                ran = true;
                return 1;
            });
        } catch (const fib::Cancelled&) {
            cancelled = true;
        }
    });
    fib::this_fiber::yield();  // the fiber queues its work behind the busy one, and parks
    fiber.cancel();
    fiber.join();  // at once: the gate is still shut
    EXPECT_TRUE(cancelled);
    gate.release();
    EXPECT_EQ(busy.get(), 0);
    fib::FiberManager::current()->wait_for_all();  // the drainer brings the given-up work home
    EXPECT_FALSE(ran);
    const fib::OffloadStats after = fib::offload_stats();
    EXPECT_EQ(after.started - before.started, 2u);
    EXPECT_EQ(after.delivered - before.delivered, 2u);
}

// An Offload dropped without get() settles its work the same way: given up if queued, waited
// for if started (its callable may hold references into this frame).
TEST(L08_Offload, AnOffloadDroppedWithoutGetWaitsForItsStartedWork) {
    Home home;
    fib::ThreadPool pool(1);
    Gate gate;
    std::atomic<bool> started{false};
    int in_my_frame = 0;
    bool ended = false;
    fib::Fiber fiber([&] {
        {
            auto work = fib::start(pool, [&] {
                started = true;
                started.notify_all();
                gate.wait();
                in_my_frame = 42;
                return 0;
            });
            while (!started.load()) fib::this_fiber::yield();  // a worker has taken it
        }  // dropped here, its work running
        ended = true;
    });
    while (!started.load()) fib::this_fiber::yield();
    for (int i = 0; i < 20; ++i) fib::this_fiber::yield();
    EXPECT_FALSE(ended);
    gate.release();
    fiber.join();
    EXPECT_EQ(in_my_frame, 42);
}

TEST(L08_Offload, WaitFirstSaysWhichFinishedFirstAndGetOfEachStillWorks) {
    Home home;
    fib::ThreadPool pool(2);
    Gate slow_gate;
    auto slow = fib::start(pool, [&] {
        slow_gate.wait();
        return 1;
    });
    auto fast = fib::start(pool, [] { return 2; });
    EXPECT_EQ(fib::wait_first(slow, fast), 1u);
    EXPECT_FALSE(slow.done());
    slow_gate.release();
    EXPECT_EQ(slow.get() + fast.get(), 3);
}

// Both results arrive in one batch: the first wakes the fiber, and the second must not wake it
// again (it is Ready by then, no longer Blocked).
TEST(L08_Offload, TwoResultsInOneBatchWakeAFiberWaitingForTheFirstOfThemOnce) {
    Home home;
    fib::ThreadPool pool(2);
    Gate gate;
    auto a = fib::start(pool, [&] {
        gate.wait();
        return 1;
    });
    auto b = fib::start(pool, [&] {
        gate.wait();
        return 2;
    });
    fib::this_fiber::yield();  // the drainer waits on its Event
    const fib::OffloadStats before = fib::offload_stats();
    gate.release();
    while (fib::offload_stats().posted - before.posted < 2) std::this_thread::sleep_for(1ms);
    EXPECT_EQ(fib::wait_first(a, b), 0u);  // both arrived; the lowest index is named
    EXPECT_EQ(a.get() + b.get(), 3);
}

TEST(L08_Offload, TheCallableRunsOnTheWorkersTlsNotTheFibers) {
    Home home;
    fib::ThreadPool pool(1);
    static thread_local int counter = 0;
    counter = 5;
    errno = EBADF;
    int worker_counter = -1;
    fib::offload(pool, [&] {
        worker_counter = counter;  // the worker's own copy: 0
        counter = 100;
        errno = ENOENT;
        return 0;
    });
    EXPECT_EQ(errno, EBADF);
    EXPECT_EQ(counter, 5);
    EXPECT_EQ(worker_counter, 0);
}

// With a FiberTls (lesson 7) the fiber has TLS of its own, and the callable still runs on the
// worker's: neither sees the other's errno or thread_local.
TEST(L08_Offload, WithAFiberTlsTheFibersTlsAndTheWorkersStayApart) {
    Home home;
    fib::FiberTls tls(home.manager);
    fib::ThreadPool pool(1);
    static thread_local int counter = 0;
    int fiber_errno = 0, fiber_counter = 0, worker_counter = -1;
    fib::Fiber fiber([&] {
        counter = 7;
        errno = EBADF;
        fib::offload(pool, [&] {
            worker_counter = counter;
            counter = 100;
            errno = ENOENT;
            return 0;
        });
        fiber_errno = errno;
        fiber_counter = counter;
    });
    fiber.join();
    // The Waiter's fiber too, which may still be queued: the FiberTls must outlive every fiber.
    home.manager.wait_for_all();
    EXPECT_EQ(fiber_errno, EBADF);
    EXPECT_EQ(fiber_counter, 7);
    EXPECT_EQ(worker_counter, 0);
}

TEST(L08_Offload, APoolDestroyedWithWorkInFlightRunsItAllAndEveryFiberGetsItsResult) {
    Home home;
    auto pool = std::make_unique<fib::ThreadPool>(1);
    std::vector<int> got(100, -1);
    int started = 0;
    std::vector<fib::Fiber> fibers;
    for (int i = 0; i < 100; ++i)
        fibers.emplace_back([&got, &pool, &started, i] {
            ++started;
            got[i] = fib::offload(*pool, [i] {
                std::this_thread::sleep_for(100us);
                return i;
            });
        });
    // Every fiber has handed its work over (one yield is enough in FIFO order).
    fib_test::yield_until([&started] { return started == 100; });
    pool.reset();              // runs the queue dry, then joins the worker
    for (fib::Fiber& fiber : fibers) fiber.join();
    for (int i = 0; i < 100; ++i) EXPECT_EQ(got[i], i);
}

// On a worker there is no fiber to park: a nested offload runs there, at once.
TEST(L08_Offload, AnOffloadFromAWorkerRunsInlineOnThatWorker) {
    Home home;
    fib::ThreadPool pool(1);
    std::thread::id outer, inner;
    const int got = fib::offload(pool, [&] {
        outer = std::this_thread::get_id();
        return fib::offload(pool, [&] {
                   inner = std::this_thread::get_id();
                   return 7;
               }) + 1;
    });
    EXPECT_EQ(got, 8);
    EXPECT_EQ(inner, outer);
}

// A thread's home (its inbox, the eventfd its results wake it through, the drainer) is kept
// from one offload to the next, and ends with the thread; under a later FiberManager of the
// thread it is made again. The eventfds this process has open, from /proc/self/fd.
int open_eventfds() {
    int count = 0;
    for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd")) {
        std::error_code error;
        if (std::filesystem::read_symlink(entry.path(), error).string() == "anon_inode:[eventfd]")
            ++count;
    }
    return count;
}

TEST(L08_Offload, AThreadsHomeIsKeptBetweenOffloadsAndEndsWithTheThread) {
    const int before = open_eventfds();
    int during = -1, after_more = -1;
    std::thread([&] {
        Home home;
        fib::ThreadPool pool(1);
        EXPECT_EQ(fib::offload(pool, [] { return 1; }), 1);
        during = open_eventfds();
        for (int i = 0; i < 100; ++i) EXPECT_EQ(fib::offload(pool, [i] { return i; }), i);
        after_more = open_eventfds();
    }).join();
    EXPECT_EQ(after_more, during);  // no eventfd made or closed per offload
    EXPECT_EQ(open_eventfds(), before);  // the thread's home closed its eventfd at its exit
}

// Each manager's home Event belongs to it (lesson 6: an Event is its thread's manager's). Managers
// made one after another on one thread, at new addresses (a spacer keeps the last one's block
// taken) and at the same one, each offload through a home of their own.
TEST(L08_Offload, LaterManagersOfAThreadOffloadThroughAHomeOfTheirOwn) {
    fib::ThreadPool pool(1);
    std::vector<std::unique_ptr<char[]>> spacers;
    for (int i = 0; i < 4; ++i) {
        auto home = std::make_unique<Home>();
        EXPECT_EQ(fib::offload(pool, [i] { return i; }), i);
        home.reset();
        if (i % 2 == 0) spacers.push_back(std::make_unique<char[]>(sizeof(Home)));
    }
}

// After fork() the child's copy of its thread's home shares the parent's eventfd (a read in one
// would take the other's wake-up) and a mutex a worker of the parent may have held. The child
// leaves it alone: its first offload makes a home with an eventfd of its own.
int child_offloads_through_a_home_of_its_own() {
    const int inherited = open_eventfds();
    Home home;
    fib::ThreadPool pool(1);
    if (fib::offload(pool, [] { return 7; }) != 7) return 2;
    return open_eventfds() == inherited + 1 ? 0 : 1;
}

TEST(L08_Offload, AForkedChildsOffloadsUseAHomeOfItsOwn) {
    SKIP_UNDER_THREAD_SANITIZER("TSan, in a child forked from a process with threads, reports "
                                "the parent's threads' writes as races");
    int status = -1;
    std::thread([&] {
        {
            Home home;
            fib::ThreadPool pool(1);
            ASSERT_EQ(fib::offload(pool, [] { return 1; }), 1);  // this thread's home is made
        }
        const pid_t child = ::fork();
        if (child == 0) std::_Exit(child_offloads_through_a_home_of_its_own());
        ASSERT_GT(child, 0);
        ::waitpid(child, &status, 0);
    }).join();
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status;
}

TEST(L08_OffloadDeathTest, AnOffloadOnAThreadWithNoManagerStops) {
    EXPECT_DEATH(
        {
            fib::ThreadPool pool(1);
            std::thread([&] { fib::offload(pool, [] { return 0; }); }).join();
        },
        "offload on a thread with neither a FiberManager nor a place in a ThreadPool");
}

TEST(L08_OffloadDeathTest, GettingAResultTwiceStops) {
    EXPECT_DEATH(
        {
            Home home;
            fib::ThreadPool pool(1);
            auto work = fib::start(pool, [] { return 1; });
            work.get();
            work.get();
        },
        "Offload::get\\(\\) was called twice");
}
