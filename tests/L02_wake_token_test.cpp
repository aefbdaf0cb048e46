// L02_wake_token_test.cpp — lesson 2: wakes name the wait they end. A wake with an earlier wait's
// token (one that came late) leaves a later wait alone, a token taken for a wait that never
// parked wakes nothing later, a second wake of one wait does nothing, and parking under a token
// that is not the fiber's current wait stops the program; so does a park that the fiber's
// on_park refuses.
#include <gtest/gtest.h>

#include "L02_schedule.hpp"
#include "fib/fatal.hpp"
#include "fib/fiber.hpp"

namespace {

// Fiber A waits twice. Its first wait's token is kept by a waker that is slow to use it: by
// the time it does, A was woken by someone else and has begun its second wait, for something
// else entirely. The late wake must not end that second wait.
TEST(L02_WakeToken, AWakeWithAnEarlierWaitsTokenDoesNotEndALaterWait) {
    fib::FiberManager manager;
    fib::ParkToken first{}, second{};
    int woken_from_second = 0;
    fib::Fiber a({.name = "a"}, [&] {
        first = manager.begin_wait();
        manager.park(first, fib::WaitSite{"the first thing", nullptr, nullptr});
        second = manager.begin_wait();
        manager.park(second, fib::WaitSite{"the second thing", nullptr, nullptr});
        ++woken_from_second;
    });
    fib_test::yield_until([&] { return first.fiber && fib::FiberManager::parked(first); });
    EXPECT_TRUE(manager.wake(first));  // the first wait ends as it should
    fib_test::yield_until([&] { return second.fiber && fib::FiberManager::parked(second); });
    EXPECT_FALSE(manager.wake(first));  // late: a's first wait is long over
    for (int i = 0; i < 10; ++i) fib::this_fiber::yield();
    EXPECT_EQ(woken_from_second, 0);
    EXPECT_TRUE(fib::FiberManager::parked(second));
    EXPECT_TRUE(manager.wake(second));
    a.join();
    EXPECT_EQ(woken_from_second, 1);
}

// A wait that finds its condition met does not park; its token was handed out all the same.
// Each wait takes a new token, so that one cannot end the fiber's next wait either.
TEST(L02_WakeToken, ATokenOfAWaitThatNeverParkedWakesNothingLater) {
    fib::FiberManager manager;
    fib::ParkToken unused{}, parked_under{};
    bool woke = false;
    fib::Fiber a([&] {
        unused = manager.begin_wait();  // ... and the condition turned out to hold: no park
        parked_under = manager.begin_wait();
        manager.park(parked_under, fib::WaitSite{"something", nullptr, nullptr});
        woke = true;
    });
    fib_test::yield_until([&] { return parked_under.fiber && fib::FiberManager::parked(parked_under); });
    EXPECT_FALSE(manager.wake(unused));
    fib::this_fiber::yield();
    EXPECT_FALSE(woke);
    EXPECT_TRUE(manager.wake(parked_under));
    a.join();
    EXPECT_TRUE(woke);
}

// Two wakers race for one wait (a timer and a notify, say): the first wins, the second finds
// the fiber no longer parked and changes nothing, wherever the fiber is by then.
TEST(L02_WakeToken, OnlyTheFirstOfTwoWakesOfOneWaitWakesIt) {
    fib::FiberManager manager;
    fib::ParkToken token{};
    int wakes_seen = 0;
    fib::Fiber a([&] {
        token = manager.begin_wait();
        manager.park(token, fib::WaitSite{"one thing", nullptr, nullptr});
        ++wakes_seen;
    });
    fib_test::yield_until([&] { return token.fiber && fib::FiberManager::parked(token); });
    EXPECT_TRUE(manager.wake(token));
    EXPECT_FALSE(manager.wake(token));  // Ready, not parked: no second queueing
    EXPECT_EQ(manager.ready_count(), 1u);
    a.join();
    EXPECT_EQ(wakes_seen, 1);
    EXPECT_FALSE(manager.wake(fib::ParkToken{}));  // nobody waits: nothing to wake
}

void park_under_an_old_token() {
    fib::FiberManager manager;
    fib::Fiber a({.name = "stale"}, [&manager] {
        const fib::ParkToken old = manager.begin_wait();
        manager.begin_wait();
        manager.park(old, fib::WaitSite{"an old wait", nullptr, nullptr});
    });
    a.join();
}

void park_under_another_fibers_token() {
    fib::FiberManager manager;
    const fib::ParkToken mains = manager.begin_wait();
    fib::Fiber a({.name = "borrower"}, [&manager, mains] {
        manager.park(mains, fib::WaitSite{"main's wait", nullptr, nullptr});
    });
    a.join();
}

TEST(L02_WakeTokenDeathTest, ParkingUnderATokenThatIsNotTheCurrentWaitsStops) {
    EXPECT_DEATH(park_under_an_old_token(),
                 "fiber 1 \\(stale\\) parked in an old wait with a token that is not its current "
                 "wait's");
    EXPECT_DEATH(park_under_another_fibers_token(),
                 "fiber 1 \\(borrower\\) parked in main's wait with a token that is not its "
                 "current wait's");
}

// Code run on a fiber for others (a callback, a task) may forbid it to park: park() asks the
// fiber's on_park first, which stops the program naming the wait.
void park_where_parking_is_refused() {
    fib::FiberManager manager;
    fib::Fiber runner({.name = "runner"}, [&manager] {
        fib::FiberRecord& self = *manager.running();
        self.on_park = [](const fib::FiberRecord& fiber, const fib::WaitSite& site, void* why) {
            fib::fatal("%s parked in %s while %s", fib::label(fiber).text, site.what,
                       static_cast<const char*>(why));
        };
        self.on_park_context = const_cast<char*>("it ran a callback");
        manager.park(manager.begin_wait(), fib::WaitSite{"a nap", nullptr, nullptr});
    });
    runner.join();
}

TEST(L02_WakeTokenDeathTest, AFiberWhoseOnParkRefusesStopsNamingTheWait) {
    EXPECT_DEATH(park_where_parking_is_refused(),
                 "fiber 1 \\(runner\\) parked in a nap while it ran a callback");
}

}  // namespace
