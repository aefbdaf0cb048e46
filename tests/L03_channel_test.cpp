// L03_channel_test.cpp — lesson 3: Channel<T>, the bounded FIFO built on two CondVars. Order,
// the capacity bound, blocking on empty (and again after a wake-up for a value another fiber
// took), close (waking receivers and senders, draining what was sent before it, refusing later
// sends), move-only values, and many producers and consumers delivering every value exactly
// once.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <numeric>
#include <optional>
#include <stdexcept>
#include <vector>

#include "fib/channel.hpp"
#include "fib/fiber.hpp"

namespace {

// Receives until the channel is closed and drained, at most `limit` values.
template <class T>
std::vector<T> receive_all(fib::Channel<T>& channel, int limit) {
    std::vector<T> values;
    for (int i = 0; i < limit; ++i) {
        std::optional<T> value = channel.receive();
        if (!value) break;
        values.push_back(std::move(*value));
    }
    return values;
}

TEST(L03_Channel, ValuesArriveInTheOrderTheyWereSent) {
    fib::FiberManager manager;
    fib::Channel<int> numbers(4);
    fib::Fiber producer([&numbers] {
        for (int i = 0; i < 100; ++i) numbers.send(i);
        numbers.close();
    });
    const std::vector<int> received = receive_all(numbers, 200);
    producer.join();
    std::vector<int> expected(100);
    std::iota(expected.begin(), expected.end(), 0);
    EXPECT_EQ(received, expected);
}

// The producer runs alone until its fourth send finds the channel full and blocks.
TEST(L03_Channel, SenderBlocksWhenTheChannelHoldsCapacityValues) {
    fib::FiberManager manager;
    fib::Channel<int> numbers(3);
    int sent = 0;
    fib::Fiber producer([&] {
        for (int i = 0; i < 10; ++i) {
            numbers.send(i);
            ++sent;
        }
    });
    fib::this_fiber::yield();
    EXPECT_EQ(sent, 3);
    EXPECT_EQ(numbers.size(), 3u);
    EXPECT_EQ(numbers.capacity(), 3u);
    std::vector<int> received;
    for (int i = 0; i < 10; ++i) received.push_back(numbers.receive().value_or(-1));
    producer.join();
    EXPECT_EQ(sent, 10);
    EXPECT_EQ(received, (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));
}

TEST(L03_Channel, ReceiveOnAnEmptyChannelBlocksUntilASend) {
    fib::FiberManager manager;
    fib::Channel<int> numbers(2);
    std::optional<int> got;
    fib::Fiber receiver([&] { got = numbers.receive(); });
    for (int i = 0; i < 3; ++i) fib::this_fiber::yield();
    EXPECT_FALSE(got.has_value());
    EXPECT_TRUE(numbers.send(42));
    // Woken, but not run yet: main goes on until it blocks in join().
    EXPECT_FALSE(got.has_value());
    receiver.join();
    EXPECT_EQ(got, 42);
    EXPECT_EQ(numbers.size(), 0u);
}

// The woken receiver runs only when main yields; by then main has taken the value itself. The
// receiver must wait again (receive's `while`), not take the empty channel for a closed one.
TEST(L03_Channel, AReceiverWokenForAValueAnotherTookWaitsAgainInsteadOfEnding) {
    fib::FiberManager manager;
    fib::Channel<int> numbers(2);
    std::optional<int> got;
    bool returned = false;
    fib::Fiber receiver([&] {
        got = numbers.receive();
        returned = true;
    });
    fib::this_fiber::yield();  // the receiver now waits
    EXPECT_TRUE(numbers.send(1));
    EXPECT_EQ(numbers.receive(), 1);  // main takes it before the woken receiver runs
    fib::this_fiber::yield();
    EXPECT_FALSE(returned);
    EXPECT_TRUE(numbers.send(2));
    receiver.join();
    EXPECT_EQ(got, 2);
}

TEST(L03_Channel, CloseWakesEveryBlockedReceiverWithNullopt) {
    fib::FiberManager manager;
    fib::Channel<int> numbers(2);
    int returned = 0, got_nullopt = 0;
    auto receiver = [&] {
        if (!numbers.receive()) ++got_nullopt;
        ++returned;
    };
    fib::Fiber receivers[3] = {fib::Fiber(receiver), fib::Fiber(receiver), fib::Fiber(receiver)};
    fib::this_fiber::yield();
    EXPECT_EQ(returned, 0);
    numbers.close();
    EXPECT_TRUE(numbers.closed());
    for (fib::Fiber& fiber : receivers) fiber.join();
    EXPECT_EQ(returned, 3);
    EXPECT_EQ(got_nullopt, 3);
}

TEST(L03_Channel, ReceiveAfterCloseDrainsEveryValueSentBeforeThenGivesNullopt) {
    fib::FiberManager manager;
    fib::Channel<int> numbers(3);
    for (int i = 1; i <= 3; ++i) ASSERT_TRUE(numbers.send(i * 10));
    numbers.close();
    EXPECT_EQ(numbers.receive(), 10);
    EXPECT_EQ(numbers.receive(), 20);
    EXPECT_EQ(numbers.receive(), 30);
    EXPECT_EQ(numbers.receive(), std::nullopt);
    EXPECT_EQ(numbers.receive(), std::nullopt);
    EXPECT_EQ(manager.stats().switches, 0u);
}

TEST(L03_Channel, SendAfterCloseReturnsFalseAndEnqueuesNothing) {
    fib::FiberManager manager;
    fib::Channel<int> numbers(3);
    EXPECT_TRUE(numbers.send(1));
    numbers.close();
    EXPECT_FALSE(numbers.send(2));
    EXPECT_EQ(numbers.size(), 1u);
    EXPECT_EQ(numbers.receive(), 1);
    EXPECT_EQ(numbers.receive(), std::nullopt);
}

TEST(L03_Channel, CloseWakesABlockedSenderWhichReturnsFalse) {
    fib::FiberManager manager;
    fib::Channel<int> numbers(1);
    std::vector<bool> results;
    fib::Fiber sender([&] {
        results.push_back(numbers.send(1));
        results.push_back(numbers.send(2));
    });
    fib::this_fiber::yield();
    // The first send filled the channel; the second waits for room.
    EXPECT_EQ(results, (std::vector<bool>{true}));
    numbers.close();
    sender.join();
    EXPECT_EQ(results, (std::vector<bool>{true, false}));
    EXPECT_EQ(numbers.size(), 1u);
    EXPECT_EQ(numbers.receive(), 1);
    EXPECT_EQ(numbers.receive(), std::nullopt);
}

TEST(L03_Channel, MoveOnlyValuesGoThrough) {
    fib::FiberManager manager;
    fib::Channel<std::unique_ptr<int>> boxes(2);
    fib::Fiber producer([&boxes] {
        for (int i = 0; i < 5; ++i) boxes.send(std::make_unique<int>(i * i));
        boxes.close();
    });
    std::vector<int> values;
    for (const std::unique_ptr<int>& box : receive_all(boxes, 10)) values.push_back(box ? *box : -1);
    producer.join();
    EXPECT_EQ(values, (std::vector<int>{0, 1, 4, 9, 16}));
}

TEST(L03_Channel, CapacityZeroThrowsInvalidArgument) {
    EXPECT_THROW(fib::Channel<int>(0), std::invalid_argument);
}

// 4 producers each send 1,000 distinct values; 3 consumers take them through 5 slots. Every
// value arrives exactly once, and each consumer sees any one producer's values in order.
TEST(L03_Channel, ManyProducersAndConsumersDeliverEveryValueExactlyOnce) {
    constexpr int kProducers = 4, kPerProducer = 1000, kConsumers = 3;
    fib::FiberManager manager;
    fib::Channel<int> numbers(5);
    std::vector<fib::Fiber> producers, consumers;
    for (int p = 0; p < kProducers; ++p) {
        producers.emplace_back([&numbers, p] {
            for (int i = 0; i < kPerProducer; ++i) numbers.send(p * kPerProducer + i);
        });
    }
    std::vector<std::vector<int>> taken(kConsumers);
    for (int c = 0; c < kConsumers; ++c) {
        consumers.emplace_back([&numbers, &mine = taken[c]] {
            mine = receive_all(numbers, 2 * kProducers * kPerProducer);
        });
    }
    for (fib::Fiber& producer : producers) producer.join();
    numbers.close();
    for (fib::Fiber& consumer : consumers) consumer.join();

    std::vector<int> all;
    for (const std::vector<int>& mine : taken) {
        std::vector<int> last(kProducers, -1);
        for (int value : mine) {
            EXPECT_GT(value, last[value / kPerProducer]) << "out of order: " << value;
            last[value / kPerProducer] = value;
        }
        all.insert(all.end(), mine.begin(), mine.end());
    }
    std::sort(all.begin(), all.end());
    std::vector<int> expected(kProducers * kPerProducer);
    std::iota(expected.begin(), expected.end(), 0);
    EXPECT_EQ(all.size(), expected.size());
    EXPECT_TRUE(all == expected) << "some value was lost or delivered twice";
    EXPECT_EQ(manager.stats().finished, static_cast<std::uint64_t>(kProducers + kConsumers));
}

}  // namespace
