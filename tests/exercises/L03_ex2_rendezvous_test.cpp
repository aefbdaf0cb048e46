// L03_ex2_rendezvous_test.cpp — lesson 3, exercise 2: the unbuffered channel
// (lessons/03-condvar/exercises/ex2_rendezvous/rendezvous.hpp).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "fib/fiber.hpp"
#include "rendezvous.hpp"

TEST(L03_Ex2Rendezvous, SendDoesNotReturnBeforeAReceiverTookTheValue) {
    fib::FiberManager manager;
    Rendezvous<std::string> channel;
    bool sent = false;
    fib::Fiber sender([&] {
        channel.send("hello");
        sent = true;
    });
    for (int i = 0; i < 3; ++i) fib::this_fiber::yield();
    EXPECT_FALSE(sent);  // no receiver yet
    EXPECT_EQ(channel.receive(), "hello");
    sender.join();
    EXPECT_TRUE(sent);
}

TEST(L03_Ex2Rendezvous, AReceiverWaitsForASender) {
    fib::FiberManager manager;
    Rendezvous<int> channel;
    int got = 0;
    fib::Fiber receiver([&] { got = channel.receive(); });
    for (int i = 0; i < 3; ++i) fib::this_fiber::yield();
    EXPECT_EQ(got, 0);
    channel.send(7);
    receiver.join();
    EXPECT_EQ(got, 7);
}

TEST(L03_Ex2Rendezvous, TwoSendersHandOverOneValueEachInTurn) {
    fib::FiberManager manager;
    Rendezvous<int> channel;
    int returned = 0;
    auto send = [&](int value) {
        channel.send(value);
        ++returned;
    };
    fib::Fiber first(send, 1), second(send, 2);
    for (int i = 0; i < 3; ++i) fib::this_fiber::yield();
    EXPECT_EQ(returned, 0);
    std::vector<int> got{channel.receive()};
    for (int i = 0; i < 3; ++i) fib::this_fiber::yield();
    EXPECT_EQ(returned, 1);
    got.push_back(channel.receive());
    first.join();
    second.join();
    EXPECT_EQ(returned, 2);
    EXPECT_EQ(got, (std::vector<int>{1, 2}));
}
