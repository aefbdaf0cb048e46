// L06_wait_any_test.cpp — lesson 6: wait_any and the timed I/O built on it. The fiber learns
// which source fired (index and revents) among pipes, sockets and Events, the lowest index when
// several did; a timeout gives timed_out(); an Event set by another thread wakes it; nothing stays
// registered, so the same fds can be waited on again; a timer and an fd firing in one turn wake it
// once; a timeout that has already run out (down to Clock::duration::min()) only looks; io::wait
// and io::read with a timeout.
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/types.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstddef>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "L04_waiter_harness.hpp"
#include "fib/event.hpp"
#include "fib/fiber.hpp"
#include "fib/timer.hpp"
#include "fib/wait_any.hpp"
#include "fib/waiter.hpp"

namespace {

using namespace std::chrono_literals;
using namespace l04_waiter;
using fib::Clock;

// Yields until `done()` holds, at most 50 times; false if it never did.
template <class Done>
bool yield_until(Done done) {
    for (int i = 0; i < 50 && !done(); ++i) fib::this_fiber::yield();
    return done();
}

// Yields until the Waiter holds `count` registrations.
bool yield_until_waiting(fib::Waiter& waiter, std::size_t count) {
    return yield_until([&] { return waiter.stats().waiting == count; });
}

TEST(L06_WaitAny, LearnsWhichOfThreePipesBecameReadable) {
    fib::FiberManager manager;
    fib::Waiter waiter;
    Pair pipes[3] = {make_fds(), make_fds(), make_fds()};
    fib::Ready ready;
    fib::Fiber waiting([&] {
        ready = fib::wait_any({{pipes[0].first.get(), POLLIN},
                               {pipes[1].first.get(), POLLIN},
                               {pipes[2].first.get(), POLLIN}});
    });
    ASSERT_TRUE(yield_until_waiting(waiter, 3));
    ASSERT_EQ(::write(pipes[1].second.get(), "b", 1), 1);
    waiting.join();
    EXPECT_FALSE(ready.timed_out());
    EXPECT_EQ(ready.index, 1);
    EXPECT_EQ(ready.revents, POLLIN);
    EXPECT_EQ(waiter.stats().waiting, 0u);
    EXPECT_EQ(waiter.stats().wakeups, 1u);
}

// One fiber waits on a pipe, a socket and an Event, three times, and each time clears what woke
// it: the Event (wait_any does not reset it: its owner does), then the socket's byte, then the
// pipe's hang-up. Each answer has the index and the revents of that source.
TEST(L06_WaitAny, TellsAPipeASocketAndAnEventApartWithTheirRevents) {
    fib::FiberManager manager;
    fib::Waiter waiter;
    Pair pipe = make_fds(), socket = make_fds(true);
    fib::Event mail;
    std::vector<fib::Ready> got;
    fib::Fiber waiting([&] {
        for (int i = 0; i < 3; ++i) {
            const fib::Ready ready = fib::wait_any(
                {{pipe.first.get(), POLLIN}, {socket.first.get(), POLLIN}, mail});
            got.push_back(ready);
            char byte = 0;
            if (ready.index == 2) {
                EXPECT_TRUE(mail.try_wait());
            } else if (ready.index == 1) {
                EXPECT_EQ(::read(socket.first.get(), &byte, 1), 1);
            }
        }
    });
    auto waits_again_after = [&](std::size_t answers) {
        return yield_until([&] { return got.size() == answers && waiter.stats().waiting == 3; });
    };
    ASSERT_TRUE(waits_again_after(0));
    mail.set();
    ASSERT_TRUE(waits_again_after(1));
    ASSERT_EQ(::write(socket.second.get(), "s", 1), 1);
    ASSERT_TRUE(waits_again_after(2));
    pipe.second.reset();
    waiting.join();
    ASSERT_EQ(got.size(), 3u);
    EXPECT_EQ(got[0].index, 2);
    EXPECT_EQ(got[0].revents, POLLIN);
    EXPECT_EQ(got[1].index, 1);
    EXPECT_EQ(got[1].revents, POLLIN);
    EXPECT_EQ(got[2].index, 0);
    EXPECT_EQ(got[2].revents, POLLHUP);
    EXPECT_EQ(waiter.stats().waiting, 0u);
}

// Pipes 3 and 1 of four are readable before the wait begins (written in that order): one poll
// sees both, and wait_any names the lowest index, on poll and on epoll alike.
TEST(L06_WaitAny, WithSeveralReadyPicksTheLowestIndexAndDropsTheOthers) {
    fib::FiberManager manager;
    fib::Waiter waiter;
    Pair pipes[4] = {make_fds(), make_fds(), make_fds(), make_fds()};
    ASSERT_EQ(::write(pipes[3].second.get(), "3", 1), 1);
    ASSERT_EQ(::write(pipes[1].second.get(), "1", 1), 1);
    fib::Ready ready;
    fib::Fiber waiting([&] {
        ready = fib::wait_any({{pipes[0].first.get(), POLLIN}, {pipes[1].first.get(), POLLIN},
                               {pipes[2].first.get(), POLLIN}, {pipes[3].first.get(), POLLIN}},
                              10s);
    });
    waiting.join();
    EXPECT_EQ(ready.index, 1);
    EXPECT_EQ(ready.revents, POLLIN);
    EXPECT_EQ(waiter.stats().waiting, 0u);
    EXPECT_EQ(waiter.stats().wakeups, 1u);
    EXPECT_EQ(fib::TimerHeap::of_this_thread().size(), 0u);
}

// A socket is writable at once: waiting to read one and write the other wakes on POLLOUT.
TEST(L06_WaitAny, WaitsForWritingTooAndReportsPollout) {
    fib::FiberManager manager;
    fib::Waiter waiter;
    Pair socket = make_fds(true);
    const fib::Ready ready =
        fib::wait_any({{socket.first.get(), POLLIN}, {socket.second.get(), POLLOUT}});
    EXPECT_EQ(ready.index, 1);
    EXPECT_EQ(ready.revents, POLLOUT);
    EXPECT_EQ(waiter.stats().waiting, 0u);
}

// With no source, a wait with a timeout is a sleep: it times out, and leaves no timer behind.
TEST(L06_WaitAny, WithNoSourcesAndATimeoutItTimesOutLikeASleep) {
    fib::FiberManager manager;
    fib::Waiter waiter;
    const fib::Ready ready = fib::wait_any(std::span<const fib::Source>(), 2ms);
    EXPECT_TRUE(ready.timed_out());
    EXPECT_EQ(fib::TimerHeap::of_this_thread().size(), 0u);
}

// A timeout leaves nothing behind: no registration, no timer; a second fiber then waits on the
// very same fds (a leftover registration would stop it as a double wait) and gets its byte.
TEST(L06_WaitAny, TimeoutGivesTimedOutAndLeavesTheFdsFreeForAnotherFiber) {
    fib::FiberManager manager;
    fib::Waiter waiter;
    Pair pipes[2] = {make_fds(), make_fds()};
    fib::Event mail;
    const fib::Source sources[3] = {
        {pipes[0].first.get(), POLLIN}, {pipes[1].first.get(), POLLIN}, mail};
    fib::Ready first, second;
    fib::Fiber hasty([&] { first = fib::wait_any(sources, 2ms); });
    hasty.join();
    EXPECT_TRUE(first.timed_out());
    EXPECT_EQ(first.index, fib::Ready::kTimedOut);
    EXPECT_EQ(first.revents, 0);
    EXPECT_EQ(waiter.stats().waiting, 0u);
    EXPECT_EQ(fib::TimerHeap::of_this_thread().size(), 0u);
    fib::Fiber next([&] { second = fib::wait_any(sources, 10s); });
    ASSERT_TRUE(yield_until_waiting(waiter, 3));
    ASSERT_EQ(::write(pipes[0].second.get(), "n", 1), 1);
    next.join();
    EXPECT_EQ(second.index, 0);
    EXPECT_EQ(second.revents, POLLIN);
    EXPECT_EQ(waiter.stats().waiting, 0u);
    EXPECT_EQ(fib::TimerHeap::of_this_thread().size(), 0u);
    EXPECT_FALSE(mail.try_wait());
}

// An Event already set on this thread ends wait_any before it parks: no switch, no
// registration. A pipe listed before it that is readable too still wins (the lowest index);
// one listed after it does not.
TEST(L06_WaitAny, AnEventAlreadySetEndsTheWaitWithoutParkingAndALowerReadyFdStillWins) {
    fib::FiberManager manager;
    fib::Waiter waiter;
    Pair before = make_fds(), after = make_fds();
    fib::Event mail;
    mail.set();
    const std::uint64_t switches = manager.stats().switches;
    const fib::Ready alone = fib::wait_any({{before.first.get(), POLLIN}, mail, {after.first.get(), POLLIN}});
    EXPECT_EQ(alone.index, 1);
    EXPECT_EQ(alone.revents, POLLIN);
    ASSERT_EQ(::write(before.second.get(), "b", 1), 1);
    ASSERT_EQ(::write(after.second.get(), "a", 1), 1);
    const fib::Ready both = fib::wait_any({{before.first.get(), POLLIN}, mail, {after.first.get(), POLLIN}});
    EXPECT_EQ(both.index, 0);
    EXPECT_EQ(both.revents, POLLIN);
    EXPECT_EQ(manager.stats().switches, switches);
    EXPECT_EQ(waiter.stats().fibers_started, 0u);
    EXPECT_TRUE(mail.try_wait());  // wait_any does not reset it
}

// Main sits in wait_any with a timeout; another thread waits until main's thread is in the
// Poller's system call, then sets the Event. One blocking poll, and the Event is the answer.
TEST(L06_WaitAny, AnEventSetFromAnotherThreadWakesATimedWaitAny) {
    fib::FiberManager manager;
    fib::Waiter waiter;
    Pair pipe = make_fds();
    fib::Event mail;
    const pid_t main_tid = ::gettid();
    std::atomic<bool> slept{false};
    std::thread setter([&] {
        for (int i = 0; i < 5000 && !in_system_call(main_tid); ++i)
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
        slept = in_system_call(main_tid);
        mail.set();
    });
    const fib::Ready ready = fib::wait_any({{pipe.first.get(), POLLIN}, mail}, 60s);
    setter.join();
    EXPECT_TRUE(slept);
    EXPECT_EQ(ready.index, 1);
    EXPECT_EQ(ready.revents, POLLIN);
    EXPECT_TRUE(mail.try_wait());
    EXPECT_EQ(waiter.stats().blocking_polls, 1u);
    EXPECT_EQ(fib::TimerHeap::of_this_thread().size(), 0u);
}

// The pipe is readable and the deadline already due (0 and -1 ms): one Waiter turn sees both.
// The fd wakes the fiber; the timer, finding it no longer blocked, must not wake it again (a
// second wake() would stop the program). 50 rounds, alternately on one fd and on two.
TEST(L06_WaitAny, TimerAndFdFiringInTheSameTurnWakeTheFiberOnce) {
    fib::FiberManager manager;
    fib::Waiter waiter;
    Pair pipe = make_fds(), idle = make_fds();
    ASSERT_EQ(::write(pipe.second.get(), "r", 1), 1);
    int fd_won = 0;
    fib::Fiber waiting([&] {
        for (int i = 0; i < 50; ++i) {
            const Clock::duration timeout = i % 2 ? 0ms : -1ms;
            const fib::Ready ready =
                i % 4 < 2 ? fib::io::wait(pipe.first.get(), POLLIN, timeout)
                          : fib::wait_any({{idle.first.get(), POLLIN}, {pipe.first.get(), POLLIN}},
                                          timeout);
            if (!ready.timed_out() && ready.revents == POLLIN) ++fd_won;
        }
    });
    waiting.join();
    EXPECT_EQ(fd_won, 50);
    EXPECT_EQ(waiter.stats().wakeups, 50u);
    EXPECT_EQ(waiter.stats().waiting, 0u);
    EXPECT_EQ(fib::TimerHeap::of_this_thread().size(), 0u);
}

// A timeout that has already run out, down to Clock::duration::min(), only looks: a source that
// is ready still wins; with none ready, wait_any and io::wait time out after one turn of the
// Waiter, whose poll does not block. (Had "deadline - now" overflowed, that poll would have been
// told INT_MAX ms: 24.8 days with nothing to end it.)
TEST(L06_WaitAny, TheShortestTimeoutsOnlyLookAndNeverBlockInThePoll) {
    fib::FiberManager manager;
    fib::Waiter waiter;
    Pair pipe = make_fds(), ready_pipe = make_fds();
    fib::Event mail;
    ASSERT_EQ(::write(ready_pipe.second.get(), "r", 1), 1);
    const Clock::duration shortest[] = {Clock::duration::min(), std::chrono::nanoseconds::min(),
                                        -std::chrono::hours(2'562'047), 0ns};
    for (const Clock::duration timeout : shortest) {
        EXPECT_TRUE(fib::wait_any({{pipe.first.get(), POLLIN}, mail}, timeout).timed_out());
        EXPECT_TRUE(fib::wait_any(std::span<const fib::Source>(), timeout).timed_out());
        EXPECT_TRUE(fib::io::wait(pipe.first.get(), POLLIN, timeout).timed_out());
        const fib::Ready ready =
            fib::wait_any({{pipe.first.get(), POLLIN}, {ready_pipe.first.get(), POLLIN}}, timeout);
        EXPECT_EQ(ready.index, 1);
        EXPECT_EQ(ready.revents, POLLIN);
    }
    EXPECT_EQ(waiter.stats().blocking_polls, 0u);
    EXPECT_EQ(waiter.stats().waiting, 0u);
    EXPECT_EQ(fib::TimerHeap::of_this_thread().size(), 0u);
}

// ---- io::wait and io::read with a timeout.

TEST(L06_WaitAny, IoWaitWithATimeoutTimesOutOnSilenceAndReportsReadinessInTime) {
    fib::FiberManager manager;
    fib::Waiter waiter;
    Pair pipe = make_fds();
    EXPECT_TRUE(fib::io::wait(pipe.first.get(), POLLIN, 2ms).timed_out());
    fib::Ready ready;
    fib::Fiber waiting([&] { ready = fib::io::wait(pipe.first.get(), POLLIN, 10s); });
    ASSERT_TRUE(yield_until_waiting(waiter, 1));
    ASSERT_EQ(::write(pipe.second.get(), "w", 1), 1);
    waiting.join();
    EXPECT_EQ(ready.index, 0);
    EXPECT_EQ(ready.revents, POLLIN);
}

TEST(L06_WaitAny, IoReadWithATimeoutReturnsMinusOneAndEtimedoutOnSilence) {
    fib::FiberManager manager;
    fib::Waiter waiter;
    Pair pipe = make_fds();
    char buffer[4] = {};
    errno = 0;
    EXPECT_EQ(fib::io::read(pipe.first.get(), buffer, sizeof buffer, 2ms), -1);
    EXPECT_EQ(errno, ETIMEDOUT);
    EXPECT_EQ(waiter.stats().waiting, 0u);
    EXPECT_EQ(fib::TimerHeap::of_this_thread().size(), 0u);
}

// On a socket with nothing to read, io::read with Clock::duration::min() (or
// std::chrono::nanoseconds::min()) fails with ETIMEDOUT at once, without a blocking poll.
TEST(L06_WaitAny, IoReadWithTheShortestTimeoutReturnsEtimedoutWithoutBlocking) {
    fib::FiberManager manager;
    fib::Waiter waiter;
    Pair socket = make_fds(true);
    char buffer[4] = {};
    for (const Clock::duration timeout : {Clock::duration::min(), std::chrono::nanoseconds::min()}) {
        errno = 0;
        EXPECT_EQ(fib::io::read(socket.first.get(), buffer, sizeof buffer, timeout), -1);
        EXPECT_EQ(errno, ETIMEDOUT);
    }
    EXPECT_EQ(waiter.stats().blocking_polls, 0u);
    EXPECT_EQ(waiter.stats().waiting, 0u);
    EXPECT_EQ(fib::TimerHeap::of_this_thread().size(), 0u);
}

// The bytes arrive while the reader waits (10 s to spare): it gets them, then EOF once the
// writer hangs up, never ETIMEDOUT.
TEST(L06_WaitAny, IoReadWithATimeoutReturnsTheBytesWrittenInTimeThenEof) {
    fib::FiberManager manager;
    fib::Waiter waiter;
    Pair socket = make_fds(true);
    char buffer[8] = {};
    ssize_t first = 0, second = -2;
    fib::Fiber reader([&] {
        first = fib::io::read(socket.first.get(), buffer, sizeof buffer, 10s);
        second = fib::io::read(socket.first.get(), buffer + 3, sizeof buffer - 3, 10s);
    });
    ASSERT_TRUE(yield_until_waiting(waiter, 1));
    ASSERT_EQ(::write(socket.second.get(), "abc", 3), 3);
    ASSERT_TRUE(yield_until([&] { return first == 3 && waiter.stats().waiting == 1; }));
    socket.second.reset();
    reader.join();
    EXPECT_EQ(first, 3);
    EXPECT_EQ(std::string(buffer, 3), "abc");
    EXPECT_EQ(second, 0);
    EXPECT_EQ(fib::TimerHeap::of_this_thread().size(), 0u);
}

}  // namespace
