// L06_cancel_test.cpp — lesson 6: Fiber::cancel(). Each blocking wait of the lesson, cancelled
// while it waits, returns at once with its own result (ECANCELED, false, cancelled()) and leaves
// nothing behind: no registration, no timer, no place on a CondVar's list. A cancel is sticky:
// asked before the wait, every later wait returns at once. Lesson 3's CondVar::wait throws
// Cancelled, a Channel's send and receive fail, join() passes the cancel on to the fiber it
// joins and waits for its end, and a CancelShield keeps a cancel for after a wait that must
// end on its own. Only the fiber's own thread may cancel it.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "L04_waiter_harness.hpp"
#include "fib/cancel.hpp"
#include "fib/channel.hpp"
#include "fib/condvar.hpp"
#include "fib/event.hpp"
#include "fib/fiber.hpp"
#include "fib/io.hpp"
#include "fib/tcp.hpp"
#include "fib/timer.hpp"
#include "fib/wait_any.hpp"
#include "fib/waiter.hpp"

namespace {

using namespace std::chrono_literals;
using namespace l04_waiter;

template <class Done>
bool yield_until(Done done) {
    for (int i = 0; i < 50 && !done(); ++i) fib::this_fiber::yield();
    return done();
}

// The fiber's wait ended with the value `result` and errno `error`; the Waiter keeps nothing.
struct Ended {
    long result = 0;
    int error = 0;
};

// A fiber blocked in `wait` (an io helper returning -1 on failure) is cancelled once the Waiter
// holds its registration; the helper must fail with ECANCELED.
template <class Wait>
Ended cancel_while_blocked(fib::Waiter& waiter, Wait wait) {
    Ended ended{1, 0};
    fib::Fiber blocked({.name = "blocked"}, [&] {
        ended.result = wait();
        ended.error = errno;
    });
    EXPECT_TRUE(yield_until([&] { return waiter.stats().waiting == 1; }));
    blocked.cancel();
    blocked.join();
    EXPECT_EQ(waiter.stats().waiting, 0u);
    return ended;
}

TEST(L06_Cancel, AReadWaitingForBytesFailsWithEcanceled) {
    fib::FiberManager manager;
    fib::Waiter waiter;
    Pair pipe = make_fds();
    char byte = 0;
    const Ended ended =
        cancel_while_blocked(waiter, [&] { return fib::io::read(pipe.first.get(), &byte, 1); });
    EXPECT_EQ(ended.result, -1);
    EXPECT_EQ(ended.error, ECANCELED);
}

// The socket's buffers are full, so send_all waits for POLLOUT; cancelled, it gives up.
TEST(L06_Cancel, ASendAllWaitingForRoomFailsWithEcanceled) {
    fib::FiberManager manager;
    fib::Waiter waiter;
    Pair socket = make_fds(true);
    const std::string megabyte(1 << 20, 'x');
    const Ended ended = cancel_while_blocked(waiter, [&] {
        return fib::io::send_all(socket.first.get(), megabyte.data(), megabyte.size());
    });
    EXPECT_EQ(ended.result, -1);
    EXPECT_EQ(ended.error, ECANCELED);
}

TEST(L06_Cancel, AnAcceptWaitingForAConnectionFailsWithEcanceled) {
    fib::FiberManager manager;
    fib::Waiter waiter;
    fib::UniqueFd listener = fib::tcp::listen("127.0.0.1", 0);
    const Ended ended = cancel_while_blocked(
        waiter, [&] { return fib::io::accept(listener.get(), nullptr, nullptr); });
    EXPECT_EQ(ended.result, -1);
    EXPECT_EQ(ended.error, ECANCELED);
}

// The timed helpers of wait_any.hpp: ECANCELED, not ETIMEDOUT, and no timer left behind.
TEST(L06_Cancel, TimedReadAndSendFailWithEcanceledAndLeaveNoTimer) {
    fib::FiberManager manager;
    fib::Waiter waiter;
    Pair pipe = make_fds(), socket = make_fds(true);
    char byte = 0;
    const Ended read = cancel_while_blocked(
        waiter, [&] { return fib::io::read(pipe.first.get(), &byte, 1, 60s); });
    EXPECT_EQ(read.result, -1);
    EXPECT_EQ(read.error, ECANCELED);
    const std::string megabyte(1 << 20, 'x');
    const Ended sent = cancel_while_blocked(waiter, [&] {
        return fib::io::send_all(socket.first.get(), megabyte.data(), megabyte.size(), 60s);
    });
    EXPECT_EQ(sent.result, -1);
    EXPECT_EQ(sent.error, ECANCELED);
    EXPECT_EQ(fib::TimerHeap::of_this_thread().size(), 0u);
}

TEST(L06_Cancel, ASleepReturnsFalseAndLeavesNoTimer) {
    fib::FiberManager manager;
    fib::Waiter waiter;
    bool slept = true;
    fib::Fiber sleeper([&] { slept = fib::sleep_for(1h); });
    ASSERT_TRUE(yield_until([] { return fib::TimerHeap::of_this_thread().size() == 1; }));
    sleeper.cancel();
    sleeper.join();
    EXPECT_FALSE(slept);
    EXPECT_EQ(fib::TimerHeap::of_this_thread().size(), 0u);
}

// The cancelled fiber leaves the CondVar's list: the next notify_one goes to the fiber that
// still waits (were it spent on the cancelled one, that one would be woken twice and the
// program stop).
TEST(L06_Cancel, AWaitForOnACondVarEndsCancelledAndTheNextNotifyReachesTheNextWaiter) {
    fib::FiberManager manager;
    fib::Waiter waiter;
    fib::CondVar changed;
    fib::WaitResult first{fib::WaitResult::kNotified}, second{fib::WaitResult::kCancelled};
    fib::Fiber cancelled([&] { first = fib::wait_for(changed, fib::Clock::duration::max()); });
    fib::Fiber notified([&] { second = fib::wait_for(changed, 1h); });
    ASSERT_TRUE(yield_until([&] { return changed.waiters() == 2; }));
    cancelled.cancel();
    EXPECT_EQ(changed.waiters(), 1u);
    changed.notify_one();
    cancelled.join();
    notified.join();
    EXPECT_TRUE(first.cancelled());
    EXPECT_FALSE(static_cast<bool>(first));
    EXPECT_TRUE(second.notified());
    EXPECT_EQ(fib::TimerHeap::of_this_thread().size(), 0u);
}

TEST(L06_Cancel, AWaitAnyEndsCancelledAndDropsEveryRegistrationAndItsTimer) {
    fib::FiberManager manager;
    fib::Waiter waiter;
    Pair pipes[2] = {make_fds(), make_fds()};
    fib::Event mail;
    fib::Ready ready;
    fib::Fiber blocked([&] {
        ready = fib::wait_any(
            {{pipes[0].first.get(), POLLIN}, {pipes[1].first.get(), POLLIN}, mail}, 1h);
    });
    ASSERT_TRUE(yield_until([&] { return waiter.stats().waiting == 3; }));
    blocked.cancel();
    blocked.join();
    EXPECT_TRUE(ready.cancelled());
    EXPECT_EQ(ready.revents, 0);
    EXPECT_EQ(waiter.stats().waiting, 0u);
    EXPECT_EQ(fib::TimerHeap::of_this_thread().size(), 0u);
    mail.set();  // the Event no longer names the cancelled fiber: nothing to wake
    EXPECT_TRUE(mail.try_wait());
}

TEST(L06_Cancel, AnEventWaitReturnsFalseAndTheEventStaysUsable) {
    fib::FiberManager manager;
    fib::Waiter waiter;
    fib::Event done;
    bool signaled = true;
    fib::Fiber blocked([&] { signaled = done.wait(); });
    ASSERT_TRUE(yield_until([&] { return waiter.stats().waiting == 1; }));
    blocked.cancel();
    blocked.join();
    EXPECT_FALSE(signaled);
    fib::Fiber next([&] { signaled = done.wait(); });
    ASSERT_TRUE(yield_until([&] { return waiter.stats().waiting == 1; }));
    done.set();
    next.join();
    EXPECT_TRUE(signaled);
}

// Cancelled before it runs: its first wait, and every one after, returns at once, without
// registering anything.
TEST(L06_Cancel, ACancelBeforeTheWaitIsStickyEveryLaterWaitReturnsAtOnce) {
    fib::FiberManager manager;
    fib::Waiter waiter;
    Pair pipe = make_fds();
    fib::CondVar never;
    std::vector<int> errors;
    bool slept = true, signaled = true;
    fib::WaitResult condvar{fib::WaitResult::kNotified};
    fib::Event event;
    fib::Fiber doomed([&] {
        char byte = 0;
        for (int i = 0; i < 2; ++i) {
            EXPECT_EQ(fib::io::read(pipe.first.get(), &byte, 1), -1);
            errors.push_back(errno);
        }
        EXPECT_EQ(fib::io::wait(pipe.first.get(), POLLIN), 0);
        slept = fib::sleep_for(1h);
        condvar = fib::wait_for(never, 1h);
        signaled = event.wait();
        EXPECT_TRUE(fib::wait_any({{pipe.first.get(), POLLIN}}).cancelled());
        EXPECT_TRUE(fib::this_fiber::cancelled());
    });
    doomed.cancel();
    doomed.join();
    EXPECT_EQ(errors, (std::vector<int>{ECANCELED, ECANCELED}));
    EXPECT_FALSE(slept);
    EXPECT_TRUE(condvar.cancelled());
    EXPECT_FALSE(signaled);
    EXPECT_EQ(waiter.stats().waiting, 0u);
    EXPECT_EQ(fib::TimerHeap::of_this_thread().size(), 0u);
    EXPECT_FALSE(fib::this_fiber::cancelled());  // main was not cancelled
}

// A source that fired wins over a cancel that comes before the fiber runs: the Event woke it
// first, so wait_any names the Event. The next wait begins cancelled, and a cancelled fiber
// does not wait, even for an Event that is set.
TEST(L06_Cancel, ASourceThatFiredFirstWinsTheCancelEndsTheNextWait) {
    fib::FiberManager manager;
    fib::Waiter waiter;
    fib::Event mail;
    fib::Ready first, second;
    fib::Fiber blocked([&] {
        first = fib::wait_any({mail});
        second = fib::wait_any({mail});
    });
    ASSERT_TRUE(yield_until([&] { return waiter.stats().waiting == 1; }));
    mail.set();
    blocked.cancel();
    blocked.join();
    EXPECT_EQ(first.index, 0);
    EXPECT_EQ(first.revents, POLLIN);
    EXPECT_TRUE(second.cancelled());
    EXPECT_TRUE(mail.try_wait());
}

// Lesson 3's CondVar::wait returns nothing that could say it was cut short, and a caller
// looping on it would spin if it just returned: it throws Cancelled (ECANCELED), and its place
// leaves the list at once, so the next notify reaches the next waiter.
TEST(L06_Cancel, ACondVarWaitThrowsCancelledAndTheNextNotifyReachesTheNextWaiter) {
    fib::FiberManager manager;
    fib::Waiter waiter;
    fib::CondVar changed;
    bool ready = false, first_cancelled = false, second_woke = false;
    int error = 0;
    fib::Fiber first([&] {
        try {
            changed.wait();  // once: a wait cut short must not return as if notified
        } catch (const fib::Cancelled& cancelled) {
            first_cancelled = true;
            error = cancelled.code().value();
        }
    });
    fib::Fiber second([&] {
        while (!ready) changed.wait();
        second_woke = true;
    });
    ASSERT_TRUE(yield_until([&] { return changed.waiters() == 2; }));
    first.cancel();
    EXPECT_EQ(changed.waiters(), 1u);  // off the list before it even runs
    first.join();
    EXPECT_TRUE(first_cancelled);
    EXPECT_EQ(error, ECANCELED);
    ready = true;
    changed.notify_one();  // reaches the second, not the cancelled first
    second.join();
    EXPECT_TRUE(second_woke);
}

TEST(L06_Cancel, ACondVarWaitOfAFiberCancelledBeforeItThrowsWithoutParking) {
    fib::FiberManager manager;
    fib::Waiter waiter;
    fib::CondVar never;
    bool threw = false;
    fib::Fiber late([&] {
        fib::this_fiber::yield();  // the cancel comes while it runs elsewhere
        try {
            never.wait();
        } catch (const fib::Cancelled&) {
            threw = true;
        }
    });
    late.cancel();
    late.join();
    EXPECT_TRUE(threw);
    EXPECT_EQ(never.waiters(), 0u);
}

// A Channel's send and receive, which wait on CondVars, end as for a closed channel.
TEST(L06_Cancel, ChannelSendReturnsFalseAndReceiveNothingWhenCancelled) {
    fib::FiberManager manager;
    fib::Waiter waiter;
    fib::Channel<int> full(1), empty(1);
    ASSERT_TRUE(full.send(1));
    bool sent = true;
    std::optional<int> received = 7;
    fib::Fiber sender([&] { sent = full.send(2); });
    fib::Fiber receiver([&] { received = empty.receive(); });
    for (int i = 0; i < 5; ++i) fib::this_fiber::yield();
    sender.cancel();
    receiver.cancel();
    sender.join();
    receiver.join();
    EXPECT_FALSE(sent);
    EXPECT_FALSE(received.has_value());
    EXPECT_EQ(full.size(), 1u);   // the cancelled send put nothing in
    EXPECT_FALSE(full.closed());  // and closed nothing: the channel goes on
    EXPECT_EQ(full.receive(), std::optional<int>(1));
}

// join() waits for a fiber whose captures may point into the joiner's frame, so a cancel does
// not cut it short: it passes the cancel on to the fiber joined, whose own wait ends, and the
// joiner returns once that fiber has ended.
TEST(L06_Cancel, CancellingAJoinerCancelsTheFiberItJoinsAndWaitsForItsEnd) {
    fib::FiberManager manager;
    fib::Waiter waiter;
    std::vector<std::string> order;
    bool child_slept = true;
    fib::Fiber parent([&] {
        int in_my_frame = 0;
        fib::Fiber child([&] {
            child_slept = fib::sleep_for(1h);
            in_my_frame = 42;  // the parent's frame is still there
            order.push_back("child ends");
        });
        child.join();
        order.push_back(in_my_frame == 42 ? "parent sees the child's write" : "parent saw nothing");
    });
    ASSERT_TRUE(yield_until([&] { return fib::TimerHeap::of_this_thread().size() == 1; }));
    parent.cancel();
    parent.join();
    EXPECT_FALSE(child_slept);
    EXPECT_EQ(order, (std::vector<std::string>{"child ends", "parent sees the child's write"}));
    EXPECT_EQ(fib::TimerHeap::of_this_thread().size(), 0u);
}

// A clean-up that waits for what it owns opens a CancelShield: a cancel that comes meanwhile
// is kept, the shielded wait goes on to its end, and the fiber's next wait sees the cancel.
TEST(L06_Cancel, AShieldedWaitRunsToItsEndAndTheNextWaitSeesTheCancel) {
    fib::FiberManager manager;
    fib::Waiter waiter;
    fib::Event done;
    bool shielded_wait = false, after = true, saw_cancel_inside = true;
    fib::Fiber cleaner([&] {
        {
            const fib::CancelShield shield;
            shielded_wait = done.wait();
            saw_cancel_inside = fib::this_fiber::cancelled();
        }
        after = fib::sleep_for(1h);
    });
    for (int i = 0; i < 5; ++i) fib::this_fiber::yield();
    cleaner.cancel();  // kept: the Event's wait goes on
    for (int i = 0; i < 5; ++i) fib::this_fiber::yield();
    EXPECT_FALSE(shielded_wait);
    done.set();
    cleaner.join();
    EXPECT_TRUE(shielded_wait);
    EXPECT_FALSE(saw_cancel_inside);
    EXPECT_FALSE(after);  // the shield closed: the cancel ends the sleep at once
}

TEST(L06_Cancel, CancellingAFinishedFiberChangesNothing) {
    fib::FiberManager manager;
    fib::Waiter waiter;
    int runs = 0;
    fib::Fiber quick([&] { ++runs; });
    for (int i = 0; i < 3; ++i) fib::this_fiber::yield();
    quick.cancel();
    quick.join();
    EXPECT_EQ(runs, 1);
}

void cancel_from_another_thread() {
    fib::FiberManager manager;
    fib::Waiter waiter;
    Pair pipe = make_fds();
    fib::Fiber blocked({.name = "reader"}, [&] {
        char byte = 0;
        fib::io::read(pipe.first.get(), &byte, 1);
    });
    fib::this_fiber::yield();
    std::thread([&] { blocked.cancel(); }).join();
}

void cancel_a_joined_fiber() {
    fib::FiberManager manager;
    fib::Fiber quick([] {});
    quick.join();
    quick.cancel();
}

TEST(L06_CancelDeathTest, ACancelFromAnotherThreadStopsNamingTheFiber) {
    EXPECT_DEATH(
        cancel_from_another_thread(),
        "cancel\\(\\) on fiber [0-9]+ \\(reader\\) from a thread that is not its manager's");
}

TEST(L06_CancelDeathTest, ACancelOfAJoinedFiberStops) {
    EXPECT_DEATH(cancel_a_joined_fiber(), "cancel\\(\\) on fiber [0-9]+, which was already joined");
}

}  // namespace
