// L11_msg_ring_test.cpp — lesson 11: the uring-msg rung: cross-thread Event sets as ring messages, none lost, none stale.
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <future>
#include <thread>

#include "L01_sanitizers.hpp"
#include "L11_uring_harness.hpp"
#include "fib/event.hpp"
#include "fib/fiber.hpp"
#include "fib/uring_poller.hpp"
#include "fib/wait_any.hpp"
#include "fib/waiter.hpp"

namespace {

using namespace std::chrono_literals;

// Waits for `event` at most `bound` (per wake), looping on a wake that found
// nothing set: false if it timed out, so a lost set fails the test, not hangs it.
bool wait_bounded(fib::Event& event, std::chrono::milliseconds bound = 10s) {
    for (int wakes = 0; wakes < 1000; ++wakes) {
        if (fib::wait_any({event}, bound).timed_out()) return false;
        if (event.try_wait()) return true;
    }
    return false;
}

// For a test of the messages themselves: skip where the kernel lacks MSG_RING
// (uring-msg then works as uring, and sends none).
#define SKIP_WITHOUT_MSG_RING(waiter)                                                        \
    SKIP_WITHOUT_RING(waiter);                                                               \
    if (!l11_uring::ring_of(waiter)->options().msg_ring)                                    \
    GTEST_SKIP() << "this kernel's io_uring lacks IORING_OP_MSG_RING: uring-msg is uring here"

}  // namespace

// Two uring-msg threads bounce 100,000 sets each way (10,000 under TSan): every set wakes
// the other side.
TEST(L11_MsgRing, AHundredThousandCrossThreadSetsPingPongedNoneLost) {
    constexpr int kRounds = fewer_under_thread_sanitizer(100'000);
    fib::FiberManager manager;
    fib::Waiter waiter("uring-msg");
    SKIP_WITHOUT_MSG_RING(waiter);
    fib::Event pong;  // this thread's
    std::promise<fib::Event*> made;
    int ponged = 0;
    std::uint64_t ping_messages = 0;
    std::thread ponger([&] {
        fib::FiberManager own_manager;
        fib::Waiter own("uring-msg");
        fib::Event ping;  // the ponger thread's
        made.set_value(&ping);
        fib::Fiber([&] {
            for (; ponged < kRounds; ++ponged) {
                if (!wait_bounded(ping)) break;
                pong.set();
            }
        }).join();
        ping_messages = l11_uring::ring_of(own)->messages();
    });
    fib::Event& ping = *made.get_future().get();
    int pinged = 0;
    fib::Fiber([&] {
        for (; pinged < kRounds; ++pinged) {
            ping.set();
            if (!wait_bounded(pong)) break;
        }
    }).join();
    ponger.join();
    EXPECT_EQ(pinged, kRounds);
    EXPECT_EQ(ponged, kRounds);
    // The sets went as messages: all but those before a fiber first waited, and
    // those whose fiber was not watching (found by its try_wait before it slept).
    EXPECT_GT(ping_messages + l11_uring::ring_of(waiter)->messages(), std::uint64_t{kRounds / 2});
    EXPECT_EQ(l11_uring::ring_of(waiter)->stale_messages(), 0u);
}

// A message sent just before its Event died, and its eventfd number went to a new Event a
// fiber waits on: it arrives with the old life, is dropped, and wakes that fiber not.
TEST(L11_MsgRing, ALateMessageForADestroyedEventDoesNotWakeTheNextEventOnItsFdNumber) {
    fib::FiberManager manager;
    fib::Waiter waiter("uring-msg");
    SKIP_WITHOUT_MSG_RING(waiter);
    auto first = std::make_unique<fib::Event>();
    const int number = first->fd();
    // A wait records where messages go (the Event's ring and the fd's life).
    fib::Fiber([&] { EXPECT_TRUE(fib::wait_any({*first}, 0ms).timed_out()); }).join();
    // Another uring-msg thread sets it: the message is delivered before set() returns,
    // and this thread, blocked in join(), does not enter its ring meanwhile.
    std::thread setter([&] {
        fib::FiberManager other;
        fib::Waiter other_waiter("uring-msg");
        first->set();
    });
    setter.join();
    first.reset();
    fib::Event second;
    ASSERT_EQ(second.fd(), number) << "the eventfd number was not reused";
    bool woke = false, signaled = false;
    fib::Fiber waiting([&] {
        fib::wait_any({second});
        woke = true;
        signaled = second.try_wait();
    });
    fib::UringPoller& ring = *l11_uring::ring_of(waiter);
    EXPECT_TRUE(l11_uring::yield_until([&] { return ring.stale_messages() == 1; }));
    EXPECT_FALSE(woke) << "the late message woke the fiber waiting on the fd's next Event";
    second.set();
    waiting.join();
    EXPECT_TRUE(woke);
    EXPECT_TRUE(signaled);
    EXPECT_EQ(ring.messages(), 0u);
}

// A plain std::thread has no ring: its set writes the eventfd, as on every other rung.
TEST(L11_MsgRing, ASetterThreadWithNoRingStillWakesThroughTheEventfd) {
    fib::FiberManager manager;
    fib::Waiter waiter("uring-msg");
    SKIP_WITHOUT_RING(waiter);
    fib::Event event;
    constexpr int kSets = 1000;
    fib::Event back;
    int woken = 0;
    std::thread setter([&] {
        for (int i = 0; i < kSets; ++i) {
            event.set();
            // Waits for the fiber's answer on a blocking read of back's eventfd.
            std::uint64_t count = 0;
            pollfd readable{back.fd(), POLLIN, 0};
            if (::poll(&readable, 1, 10'000) != 1 || ::read(back.fd(), &count, sizeof count) != sizeof count) return;
        }
    });
    fib::Fiber([&] {
        for (; woken < kSets; ++woken) {
            if (!wait_bounded(event)) break;
            back.set_through_eventfd();
        }
    }).join();
    setter.join();
    EXPECT_EQ(woken, kSets);
    EXPECT_EQ(l11_uring::ring_of(waiter)->messages(), 0u);
}

// A message that cannot go falls back to the eventfd. Here the owner's thread has ended (its
// ring closed with it) and the ring's fd number now holds an eventfd: the MSG_RING fails
// (EBADFD), and the set must reach the Event's eventfd, or it would be lost for a waiter that
// watches fd() itself.
TEST(L11_MsgRing, AMessageThatFailsFallsBackToTheEventfdWrite) {
    std::unique_ptr<fib::Event> event;
    int ring_number = -1;
    bool recorded = false;
    std::thread owner([&] {
        fib::FiberManager manager;
        fib::Waiter waiter("uring-msg");
        if (!l11_uring::ring_of(waiter) || !l11_uring::ring_of(waiter)->options().msg_ring) return;
        ring_number = l11_uring::ring_of(waiter)->ring().fd();
        event = std::make_unique<fib::Event>();
        fib::Fiber([&] { recorded = fib::wait_any({*event}, 0ms).timed_out(); }).join();
    });
    owner.join();
    if (!event) GTEST_SKIP() << "no io_uring with IORING_OP_MSG_RING here";
    ASSERT_TRUE(recorded);
    fib::FiberManager manager;
    const int squatter = ::eventfd(0, EFD_CLOEXEC);
    ASSERT_EQ(squatter, ring_number) << "the ring's fd number was not free for the squatter";
    fib::Waiter waiter("uring-msg");
    event->set();
    pollfd readable{event->fd(), POLLIN, 0};
    EXPECT_EQ(::poll(&readable, 1, 0), 1) << "the failed message's set did not reach the eventfd";
    EXPECT_TRUE(event->try_wait());
    ::close(squatter);
}
