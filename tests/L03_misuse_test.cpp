// L03_misuse_test.cpp — lesson 3: every misuse of CondVar and Channel stops the program with a
// "fib: fatal:" message that names it: a wait with no FiberManager, a deadlock of fibers blocked
// on CondVars or channels (the report says where each one waits), a CondVar destroyed under its
// waiters, and a notify from another thread than the waiters'.
#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <thread>

#include "L02_schedule.hpp"
#include "fib/channel.hpp"
#include "fib/condvar.hpp"
#include "fib/fiber.hpp"

namespace {

void wait_with_no_manager() {
    fib::CondVar changed;
    changed.wait();
}

// Main joins a fiber that waits on a CondVar nobody will notify.
void join_a_fiber_waiting_on_a_condvar_forever() {
    fib::FiberManager manager;
    fib::CondVar never;
    fib::Fiber sleeper({.name = "sleeper"}, [&never] { never.wait(); });
    sleeper.join();
}

// Two fibers wait on each other's CondVar; main waits for all.
void two_fibers_wait_on_condvars() {
    fib::FiberManager manager;
    fib::CondVar ping, pong;
    fib::Fiber({.name = "ping"}, [&ping] { ping.wait(); }).detach();
    fib::Fiber({.name = "pong"}, [&pong] { pong.wait(); }).detach();
    manager.wait_for_all();
}

// Main joins a fiber that receives from a channel nobody sends to.
void receive_from_a_channel_nobody_sends_to() {
    fib::FiberManager manager;
    fib::Channel<int> numbers(1);
    fib::Fiber reader({.name = "reader"}, [&numbers] { numbers.receive(); });
    reader.join();
}

// Main itself sends to a full channel nobody receives from.
void send_to_a_full_channel_nobody_receives_from() {
    fib::FiberManager manager;
    fib::Channel<int> numbers(1);
    numbers.send(1);
    numbers.send(2);
}

void destroy_a_condvar_with_waiters() {
    fib::FiberManager manager;
    auto changed = std::make_unique<fib::CondVar>();
    fib::Fiber({.name = "waiter"}, [&changed] { changed->wait(); }).detach();
    fib::Fiber({.name = "other"}, [&changed] { changed->wait(); }).detach();
    fib::this_fiber::yield();
    changed.reset();
}

// A fiber waits; a std::thread (with no FiberManager) notifies its CondVar.
void notify_from_another_thread(bool all) {
    fib::FiberManager manager;
    fib::CondVar changed;
    fib::Fiber({.name = "waiter"}, [&changed] { changed.wait(); }).detach();
    fib::this_fiber::yield();
    std::thread outsider([&changed, all] {
        if (all)
            changed.notify_all();
        else
            changed.notify_one();
    });
    outsider.join();
}

TEST(L03_MisuseDeathTest, CondVarWaitOnAThreadWithNoManagerStops) {
    EXPECT_DEATH(wait_with_no_manager(),
                 "fib: fatal: CondVar::wait\\(\\) was called on a thread with no FiberManager");
}

TEST(L03_MisuseDeathTest, DeadlockOnACondVarReportsTheWaiterInCondVarWait) {
    EXPECT_DEATH(join_a_fiber_waiting_on_a_condvar_forever(),
                 "fib: deadlock: no fiber is ready to run, and these are blocked:\n"
                 "  fiber 0 \\(main\\): in join, waiting for fiber 1 \\(sleeper\\)\n"
                 "  fiber 1 \\(sleeper\\): in CondVar::wait, on 0x[0-9a-f]+\n"
                 "fib: fatal: deadlock: every fiber is blocked");
}

TEST(L03_MisuseDeathTest, DeadlockOfTwoCondVarWaitersReportsBoth) {
    EXPECT_DEATH(two_fibers_wait_on_condvars(),
                 "  fiber 0 \\(main\\): in wait_for_all\n"
                 "  fiber 1 \\(ping\\): in CondVar::wait, on 0x[0-9a-f]+\n"
                 "  fiber 2 \\(pong\\): in CondVar::wait, on 0x[0-9a-f]+\n"
                 "fib: fatal: deadlock");
}

TEST(L03_MisuseDeathTest, DeadlockInReceiveReportsChannelReceive) {
    EXPECT_DEATH(receive_from_a_channel_nobody_sends_to(),
                 "  fiber 1 \\(reader\\): in Channel::receive, on 0x[0-9a-f]+\n"
                 "fib: fatal: deadlock");
}

TEST(L03_MisuseDeathTest, DeadlockInSendReportsChannelSend) {
    EXPECT_DEATH(send_to_a_full_channel_nobody_receives_from(),
                 "  fiber 0 \\(main\\): in Channel::send, on 0x[0-9a-f]+\n"
                 "fib: fatal: deadlock");
}

TEST(L03_MisuseDeathTest, DestroyingACondVarWithWaitersStopsNamingTheFirst) {
    EXPECTS_FIFO_ORDER();
    EXPECT_DEATH(destroy_a_condvar_with_waiters(),
                 "fib: fatal: a CondVar was destroyed while fiber 1 \\(waiter\\) \\(and 1 more\\) "
                 "waited on it");
}

TEST(L03_MisuseDeathTest, NotifyOneFromAnotherThreadStops) {
    EXPECT_DEATH(notify_from_another_thread(false),
                 "fib: fatal: CondVar::notify_one\\(\\) was called from another thread than its "
                 "waiters'");
}

TEST(L03_MisuseDeathTest, NotifyAllFromAnotherThreadStops) {
    EXPECT_DEATH(notify_from_another_thread(true),
                 "fib: fatal: CondVar::notify_all\\(\\) was called from another thread than its "
                 "waiters'");
}

}  // namespace
