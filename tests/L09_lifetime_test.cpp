// L09_lifetime_test.cpp — lesson 9: who may destroy what, and when a thread may end. A receiver
// destroys its Mailbox as soon as it has its last value (or "closed and empty"), with the
// producer that sent and closed it, and senders still parked for room, done or waited for;
// a value that does not go in gives its slot back; and a cluster thread stays while one of its
// fibers waits for room elsewhere, since the wake comes to it. ASan (make SAN=1) and TSan
// (make TSAN=1) see the races these guard against; without a sanitizer they usually pass.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdio>
#include <latch>
#include <memory>
#include <optional>
#include <stdexcept>
#include <vector>

#include "fib/cancel.hpp"
#include "fib/cluster.hpp"
#include "fib/fiber.hpp"
#include "fib/mailbox.hpp"

namespace {

// Thread 1 makes a box and hands it out; thread 0 sends three values into it and closes it;
// thread 1 drains it and deletes it at once, 500 times over. The sender's value, the close
// and the Event's set all happen under the box's locks, so the deletion never meets them.
TEST(L09_Lifetime, AReceiverDeletesItsBoxAsSoonAsItIsClosedAndEmpty) {
    constexpr int kRounds = 500;
    fib::Cluster cluster({.threads = 2});
    std::atomic<fib::Mailbox<int>*> shared{nullptr};
    std::atomic<int> rounds_ok{0};
    cluster.run([&](std::size_t index) {
        for (int round = 0; round < kRounds; ++round) {
            if (index == 1) {
                auto* box = new fib::Mailbox<int>(2);
                shared.store(box);
                shared.notify_all();
                int sum = 0, count = 0;
                while (std::optional<int> value = box->receive()) sum += *value, ++count;
                delete box;  // closed and empty: nobody is inside any more
                if (sum == 6 && count == 3) ++rounds_ok;
            } else {
                fib::Mailbox<int>* box;
                while (!(box = shared.exchange(nullptr))) shared.wait(nullptr);
                for (int value = 1; value <= 3; ++value) box->send(value);
                box->close();  // the box may be gone the moment this returns
            }
        }
    });
    EXPECT_EQ(rounds_ok.load(), kRounds);
}

// A box of one, full: thread 0's second send parks for room. The receiver (thread 1) deletes
// the box without taking anything: the destructor closes it, which wakes the parked sender
// (its send fails), and waits until that send has left the box before it frees it.
TEST(L09_Lifetime, DeletingABoxWithASenderParkedForRoomWaitsForTheSenderToLeave) {
    fib::Cluster cluster({.threads = 2});
    std::atomic<fib::Mailbox<int>*> shared{nullptr};
    std::latch parked(1);
    bool second_sent = true;
    cluster.run([&](std::size_t index) {
        if (index == 1) {
            auto* box = new fib::Mailbox<int>(1);
            shared.store(box);
            shared.notify_all();
            parked.wait();  // thread 0's sender is in its second send, parked
            delete box;
        } else {
            fib::Mailbox<int>* box;
            while (!(box = shared.load())) shared.wait(nullptr);
            fib::Fiber sender([&] {
                box->send(1);
                second_sent = box->send(2);
            });
            for (int i = 0; i < 10; ++i) fib::this_fiber::yield();  // it sends, then parks
            parked.count_down();
            sender.join();
        }
    });
    EXPECT_FALSE(second_sent);
}

// A value whose move throws never gets into the box; its slot comes back, so the box of one
// still takes the next value.
struct Brittle {
    bool throw_on_move = false;
    Brittle() = default;
    explicit Brittle(bool brittle) : throw_on_move(brittle) {}
    Brittle(Brittle&& other) : throw_on_move(other.throw_on_move) {
        if (throw_on_move) throw std::runtime_error("moved");
    }
    Brittle& operator=(Brittle&&) = default;
};

TEST(L09_Lifetime, AValueThatFailsToGoInGivesItsSlotBack) {
    fib::Cluster cluster({.threads = 1});
    bool threw = false, next_sent = false, received = false;
    cluster.run([&](std::size_t) {
        fib::Mailbox<Brittle> box(1);
        try {
            box.try_send(Brittle(true));
        } catch (const std::runtime_error&) {
            threw = true;
        }
        next_sent = box.try_send(Brittle(false));
        received = box.try_receive().has_value();
    });
    EXPECT_TRUE(threw);
    EXPECT_TRUE(next_sent);
    EXPECT_TRUE(received);
}

// Thread 0's main spawns a fiber that sends two values into thread 1's box of one (the second
// parks for room), then stops the cluster and returns. Thread 0 has a stop, its main done and
// no posted fiber: it used to end here, its inbox closed, and the slot's wake, when thread 1
// took the first value, found nobody (a deadlock report said, falsely, that none could wake the
// others). A thread now stays while one of its fibers waits for a slot anywhere.
TEST(L09_Lifetime, AThreadStaysWhileOneOfItsFibersWaitsForRoomInAnotherThreadsBox) {
    fib::Cluster cluster({.threads = 2});
    std::atomic<fib::Mailbox<int>*> shared{nullptr};
    std::latch stopped(1);
    std::vector<int> got;
    cluster.start([&](std::size_t index) {
        if (index == 1) {
            auto box = std::make_unique<fib::Mailbox<int>>(1);
            shared.store(box.get());
            shared.notify_all();
            stopped.wait();  // thread 0 is stopping, its sender parked for room
            const fib::CancelShield taking_them_anyway;  // the stop cancels this main too
            for (int i = 0; i < 2; ++i)
                if (std::optional<int> value = box->receive()) got.push_back(*value);
        } else {
            fib::Mailbox<int>* box;
            while (!(box = shared.load())) shared.wait(nullptr);
            fib::Fiber([box] {
                box->send(1);
                box->send(2);
            }).detach();
            for (int i = 0; i < 10; ++i) fib::this_fiber::yield();  // it sends, then parks
            cluster.stop();
            stopped.count_down();
        }
    });
    cluster.join();
    EXPECT_EQ(got, (std::vector<int>{1, 2}));
}

// ThreadSanitizer sees races between threads, even when each thread runs fibers: two cluster
// threads adding to one plain int, with no lock, is reported, and stops the binary (make TSAN=1
// runs with halt_on_error). A check of the instrument itself: without TSan it is skipped.
#if defined(__SANITIZE_THREAD__)
void race_between_two_cluster_threads() {
    fib::Cluster cluster({.threads = 2});
    long shared = 0;  // no lock, no atomic: the planted race
    cluster.run([&shared](std::size_t) {
        for (int i = 0; i < 1000; ++i) {
            shared += 1;
            fib::this_fiber::yield();
        }
    });
    std::printf("%ld\n", shared);
}
#endif

TEST(L09_TsanDeathTest, ARacePlantedBetweenTwoClusterThreadsIsReported) {
#if !defined(__SANITIZE_THREAD__)
    GTEST_SKIP() << "runs under ThreadSanitizer: make TSAN=1 test-lesson9";
#else
    EXPECT_DEATH(race_between_two_cluster_threads(), "ThreadSanitizer: data race");
#endif
}

}  // namespace
