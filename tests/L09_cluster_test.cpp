// L09_cluster_test.cpp — lesson 9: Cluster, post and Mailbox. Each thread its own manager, its
// fibers never leaving it; posts run on the thread named, bounded, a full thread parking the
// poster; values between threads under load, every one checked, in order per sender; ping-pong
// through boxes of one (a lost wake-up hangs it); a cancelled sender gives its place up; close;
// stop cancelling mains and posted fibers; misuse.
#include <gtest/gtest.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <chrono>
#include <latch>
#include <optional>
#include <stdexcept>
#include <thread>
#include <vector>

#include "L01_sanitizers.hpp"
#include "fib/cluster.hpp"
#include "fib/condvar.hpp"
#include "fib/fiber.hpp"
#include "fib/mailbox.hpp"
#include "fib/timer.hpp"

using namespace std::chrono_literals;

namespace {

// Each thread's Mailbox, made on that thread; published before any is used.
template <typename T>
struct Boxes {
    explicit Boxes(std::size_t threads) : box(threads), made(static_cast<std::ptrdiff_t>(threads)) {}
    // On thread `index`: makes its box, waits until every thread has made its own.
    fib::Mailbox<T>& make(std::size_t index, std::size_t capacity) {
        box[index] = std::make_unique<fib::Mailbox<T>>(capacity);
        made.arrive_and_wait();
        return *box[index];
    }
    std::vector<std::unique_ptr<fib::Mailbox<T>>> box;
    std::latch made;
};

}  // namespace

TEST(L09_Cluster, EachThreadHasItsOwnManagerAndItsFibersNeverLeaveIt) {
    fib::Cluster cluster({.threads = 3});
    std::atomic<int> moved{0}, checked{0};
    std::array<pid_t, 3> tids{};
    cluster.run([&](std::size_t index) {
        tids[index] = ::gettid();
        std::vector<fib::Fiber> fibers;
        for (int f = 0; f < 10; ++f)
            fibers.emplace_back([&, index] {
                const pid_t mine = ::gettid();
                for (int i = 0; i < 50; ++i) {
                    if (i % 10 == 0) fib::sleep_for(1ms);
                    else fib::this_fiber::yield();
                    if (::gettid() != mine || fib::Cluster::this_thread_index() != index) ++moved;
                    ++checked;
                }
            });
        for (fib::Fiber& fiber : fibers) fiber.join();
    });
    EXPECT_EQ(moved.load(), 0);
    EXPECT_EQ(checked.load(), 3 * 10 * 50);
    EXPECT_NE(tids[0], tids[1]);
    EXPECT_NE(tids[1], tids[2]);
    EXPECT_NE(tids[0], ::gettid());
}

TEST(L09_Cluster, APostRunsAsAFiberOnTheThreadItNames) {
    fib::Cluster cluster({.threads = 2});
    std::array<pid_t, 2> tids{};
    std::latch started(2);
    cluster.start([&](std::size_t index) {
        tids[index] = ::gettid();
        started.count_down();
    });
    started.wait();
    std::latch ran(4);
    std::array<std::atomic<int>, 2> right_thread{};
    for (std::size_t to : {0, 1, 1, 0})
        ASSERT_TRUE(cluster.try_post(to, [&, to] {
            if (::gettid() == tids[to] && fib::Cluster::this_thread_index() == to && fib::this_fiber::id() != 0)
                ++right_thread[to];
            ran.count_down();
        }));
    ran.wait();
    EXPECT_EQ(right_thread[0].load(), 2);
    EXPECT_EQ(right_thread[1].load(), 2);
}

// A main posts to the other thread as its first act, 50 times over: the other thread's inbox
// is open before any main runs, so no post is refused.
TEST(L09_Cluster, APostAMainMakesAtOnceFindsTheOtherThreadReady) {
    std::atomic<int> accepted{0};
    for (int round = 0; round < 50; ++round) {
        fib::Cluster cluster({.threads = 2});
        cluster.run([&](std::size_t index) {
            if (cluster.post(1 - index, [] {})) ++accepted;
        });
    }
    EXPECT_EQ(accepted.load(), 100);
}

// Thread 1 may hold 2 posted fibers; both wait for a gate its main opens. A third
// try_post is refused; a fiber's post parks, and goes through once a slot frees.
TEST(L09_Cluster, APostToAFullThreadParksThePosterUntilAPostedFiberEnds) {
    fib::Cluster cluster({.threads = 2, .post_capacity = 2});
    Boxes<int> opener(2);
    bool open = false;       // thread 1's
    fib::CondVar opened;     // thread 1's
    int in_flight = 0, most_in_flight = 0, ran = 0;  // thread 1's
    std::atomic<bool> third_posted{false};
    std::atomic<bool> refused{false};
    cluster.run([&](std::size_t index) {
        fib::Mailbox<int>& mine = opener.make(index, 1);
        if (index == 1) {
            mine.receive();
            open = true;
            opened.notify_all();
            return;
        }
        auto blocker = [&] {
            most_in_flight = std::max(most_in_flight, ++in_flight);
            while (!open) opened.wait();
            --in_flight;
            ++ran;
        };
        ASSERT_TRUE(cluster.post(1, blocker));
        ASSERT_TRUE(cluster.post(1, blocker));
        refused = !cluster.try_post(1, [] {});
        fib::Fiber poster([&] {
            EXPECT_TRUE(cluster.post(1, blocker));
            third_posted = true;
        });
        fib::sleep_for(50ms);
        EXPECT_FALSE(third_posted.load());  // no slot can free while the gate is shut
        ASSERT_TRUE(opener.box[1]->send(1));
        poster.join();
        EXPECT_TRUE(third_posted.load());
        std::latch all_ran(1);
        ASSERT_TRUE(cluster.post(1, [&] { all_ran.count_down(); }));
        while (!all_ran.try_wait()) fib::sleep_for(1ms);
    });
    EXPECT_TRUE(refused.load());
    EXPECT_EQ(ran, 3);
    EXPECT_EQ(most_in_flight, 2);
}

// Four threads; each sends 20,000 numbered values (2,000 under TSan) to every other thread
// through boxes of 8 (a sender parks often), and checks what it receives: every value, from
// each sender in order.
TEST(L09_Mailbox, EveryValueArrivesInOrderPerSenderBetweenFourThreadsUnderLoad) {
    constexpr std::size_t kThreads = 4;
    constexpr long kEach = fewer_under_thread_sanitizer(20'000);
    struct Value {
        std::size_t from;
        long number;
    };
    fib::Cluster cluster({.threads = kThreads});
    Boxes<Value> boxes(kThreads);
    std::atomic<long> received{0}, out_of_order{0}, send_failed{0};
    cluster.run([&](std::size_t index) {
        fib::Mailbox<Value>& mine = boxes.make(index, 8);
        fib::Fiber sender([&] {
            for (long n = 0; n < kEach; ++n)
                for (std::size_t to = 0; to < kThreads; ++to)
                    if (to != index && !boxes.box[to]->send({index, n})) ++send_failed;
        });
        std::array<long, kThreads> next{};
        for (long got = 0; got < kEach * static_cast<long>(kThreads - 1); ++got) {
            const std::optional<Value> value = mine.receive();
            ASSERT_TRUE(value.has_value());
            if (value->number != next[value->from]++) ++out_of_order;
            ++received;
        }
        sender.join();
    });
    EXPECT_EQ(received.load(), kEach * static_cast<long>(kThreads * (kThreads - 1)));
    EXPECT_EQ(out_of_order.load(), 0);
    EXPECT_EQ(send_failed.load(), 0);
}

// Boxes of one, 50,000 times there and back (5,000 under TSan): each step waits for the
// other thread's wake. A wake-up lost anywhere leaves both threads asleep, and the watchdog
// names this test.
TEST(L09_Mailbox, APingPongThroughBoxesOfOneLosesNoWakeUp) {
    constexpr long kRounds = fewer_under_thread_sanitizer(50'000);
    fib::Cluster cluster({.threads = 2});
    Boxes<long> boxes(2);
    std::atomic<long> matched{0};
    cluster.run([&](std::size_t index) {
        fib::Mailbox<long>& mine = boxes.make(index, 1);
        fib::Mailbox<long>& other = *boxes.box[1 - index];
        for (long n = 0; n < kRounds; ++n) {
            if (index == 0) {
                ASSERT_TRUE(other.send(n));
            }
            if (mine.receive() == n) ++matched;
            if (index == 1) {
                ASSERT_TRUE(other.send(n));
            }
        }
    });
    EXPECT_EQ(matched.load(), 2 * kRounds);
}

// A sender parked on a full box is cancelled: its send returns false, and the slot that
// frees next goes to nobody dead (a later try_send gets it).
TEST(L09_Mailbox, ACancelledSenderGivesUpItsPlaceInTheQueue) {
    fib::Cluster cluster({.threads = 2});
    Boxes<int> boxes(2);
    std::atomic<int> taken_after{0};
    cluster.run([&](std::size_t index) {
        fib::Mailbox<int>& mine = boxes.make(index, 2);
        if (index == 1) {
            mine.receive();  // the go-ahead from thread 0
            return;
        }
        fib::Mailbox<int>& full = *boxes.box[1];
        fib::Mailbox<int> local(2);  // thread 0's own, filled and left full
        ASSERT_TRUE(local.try_send(1));
        ASSERT_TRUE(local.try_send(2));
        bool result = true;
        fib::Fiber sender([&] { result = local.send(3); });
        fib::this_fiber::yield();  // the sender parks: the box is full
        sender.cancel();
        sender.join();
        EXPECT_FALSE(result);
        EXPECT_EQ(local.try_receive(), 1);
        if (local.try_send(4)) ++taken_after;  // the freed slot is free, not the dead sender's
        EXPECT_EQ(local.try_receive(), 2);
        EXPECT_EQ(local.try_receive(), 4);
        ASSERT_TRUE(full.send(0));
    });
    EXPECT_EQ(taken_after.load(), 1);
}

TEST(L09_Mailbox, CloseFailsSendersWakesTheReceiverAndLeavesWhatWasSent) {
    fib::Cluster cluster({.threads = 2});
    Boxes<int> boxes(2);
    std::atomic<int> parked_sender_result{-1};
    std::vector<int> got;  // thread 1's
    cluster.run([&](std::size_t index) {
        fib::Mailbox<int>& mine = boxes.make(index, 2);
        if (index == 0) {
            ASSERT_TRUE(boxes.box[1]->send(1));
            ASSERT_TRUE(boxes.box[1]->send(2));
            parked_sender_result = boxes.box[1]->send(3);  // parks until the close
            EXPECT_FALSE(boxes.box[1]->try_send(4));
            return;
        }
        fib::sleep_for(50ms);  // thread 0 is parked by now; if not, its send still fails
        mine.close();
        while (std::optional<int> value = mine.receive()) got.push_back(*value);
    });
    EXPECT_EQ(parked_sender_result.load(), 0);
    EXPECT_EQ(got, (std::vector<int>{1, 2}));
}

// stop() cancels each main wherever it waits, and every posted fiber still running;
// a post after the threads have ended is refused.
TEST(L09_Cluster, StopCancelsEveryMainAndPostedFiberAndThenRefusesPosts) {
    fib::Cluster cluster({.threads = 2});
    std::atomic<int> mains_cancelled{0}, posted_cancelled{0};
    std::latch waiting(4);
    cluster.start([&](std::size_t index) {
        fib::Mailbox<int> never(1);
        waiting.count_down();
        if (!never.receive()) ++mains_cancelled;
        (void)index;
    });
    for (std::size_t to : {0, 1})
        ASSERT_TRUE(cluster.try_post(to, [&] {
            waiting.count_down();
            if (!fib::sleep_for(1h)) ++posted_cancelled;
        }));
    waiting.wait();
    cluster.stop();
    cluster.join();
    EXPECT_EQ(mains_cancelled.load(), 2);
    EXPECT_EQ(posted_cancelled.load(), 2);
    EXPECT_FALSE(cluster.try_post(0, [] {}));
}

// Only a stopping thread's dispatcher is told when its last posted fiber ends (shard.cpp): here
// the mains have returned before the stop, and the posted fiber, cancelled, still takes a few
// turns before it ends, after the dispatcher has looked and found it running. Without that
// nudge the dispatcher sleeps on and join() waits for ever (the watchdog names the test).
TEST(L09_Cluster, AStopEndsAThreadWhoseLastPostedFiberEndsAfterTheDispatcherLooked) {
    fib::Cluster cluster({.threads = 2});
    std::latch started(1);
    std::atomic<bool> cancelled{false};
    cluster.start([](std::size_t) {});
    ASSERT_TRUE(cluster.try_post(1, [&] {
        started.count_down();
        cancelled = !fib::sleep_for(1h);
        for (int turn = 0; turn < 10; ++turn) fib::this_fiber::yield();
    }));
    started.wait();
    cluster.stop();
    cluster.join();
    EXPECT_TRUE(cancelled.load());
}

TEST(L09_Cluster, AMainThatThrowsStopsTheClusterAndJoinRethrows) {
    fib::Cluster cluster({.threads = 2});
    cluster.start([](std::size_t index) {
        if (index == 1) throw std::runtime_error("main 1 failed");
        fib::sleep_for(1h);  // cancelled by the stop that the throw asks for
    });
    EXPECT_THROW(cluster.join(), std::runtime_error);
}

TEST(L09_ClusterMisuse, PostingToAThreadOutOfRangeStopsTheProgram) {
    EXPECT_DEATH(
        {
            fib::Cluster cluster({.threads = 2});
            cluster.try_post(5, [] {});
        },
        "post to thread 5 of a Cluster of 2 threads");
}

TEST(L09_ClusterMisuse, WaitingForRoomOnAThreadOutsideEveryClusterStopsTheProgram) {
    EXPECT_DEATH(
        {
            fib::Mailbox<int> box(1);
            box.try_send(1);
            box.send(2);  // full, and this thread has no dispatcher to wake it
        },
        "Mailbox::send on a thread that is in no Cluster");
}

TEST(L09_ClusterMisuse, ReceivingOnAnotherThreadThanTheBoxesStopsTheProgram) {
    EXPECT_DEATH(
        {
            fib::Cluster cluster({.threads = 2});
            Boxes<int> boxes(2);
            cluster.run([&](std::size_t index) {
                boxes.make(index, 1);
                if (index == 0) boxes.box[1]->receive();  // thread 1's box
            });
        },
        "belongs to another thread's FiberManager");
}

TEST(L09_ClusterMisuse, StartingTwiceStopsTheProgram) {
    EXPECT_DEATH(
        {
            fib::Cluster cluster({.threads = 1});
            cluster.start([](std::size_t) {});
            cluster.start([](std::size_t) {});
        },
        "Cluster::start\\(\\) was called twice");
}

TEST(L09_ClusterMisuse, APostedCallableThatThrowsStopsTheProgramNamingItsFiber) {
    EXPECT_DEATH(
        {
            fib::Cluster cluster({.threads = 2});
            cluster.run([&](std::size_t index) {
                if (index == 0) cluster.post(1, [] { throw std::runtime_error("posted work failed"); });
                fib::sleep_for(1h);
            });
        },
        "escaped detached fiber [0-9]+ \\(posted\\).*posted work failed");
}
