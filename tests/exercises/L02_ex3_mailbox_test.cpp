// L02_ex3_mailbox_test.cpp — lesson 2, exercise 3: the one-slot Mailbox
// (lessons/02-fibers/exercises/ex3_mailbox/mailbox.hpp).
#include <gtest/gtest.h>

#include <vector>

#include "fib/fiber.hpp"
#include "fib/fiber_manager.hpp"
#include "mailbox.hpp"

TEST(L02_Ex3Mailbox, ValuesArriveInTheOrderTheyWerePut) {
    fib::FiberManager manager;
    Mailbox<int> mailbox;
    fib::Fiber producer([&] {
        for (int i = 1; i <= 5; ++i) mailbox.put(i);
    });
    std::vector<int> got;
    for (int i = 0; i < 5; ++i) got.push_back(mailbox.take());
    producer.join();
    EXPECT_EQ(got, (std::vector<int>{1, 2, 3, 4, 5}));
}

TEST(L02_Ex3Mailbox, PutWaitsWhileTheSlotIsFull) {
    fib::FiberManager manager;
    Mailbox<int> mailbox;
    int put = 0;
    fib::Fiber producer([&] {
        for (int i = 1; i <= 3; ++i) {
            mailbox.put(i);
            ++put;
        }
    });
    manager.yield();
    EXPECT_EQ(put, 1);  // the second put waits for a take
    EXPECT_EQ(mailbox.take(), 1);
    manager.yield();
    EXPECT_EQ(put, 2);
    EXPECT_EQ(mailbox.take(), 2);
    EXPECT_EQ(mailbox.take(), 3);
    producer.join();
    EXPECT_EQ(put, 3);
}

TEST(L02_Ex3Mailbox, TakeWaitsWhileTheSlotIsEmpty) {
    fib::FiberManager manager;
    Mailbox<int> mailbox;
    int taken = 0;
    fib::Fiber consumer([&] { taken = mailbox.take(); });
    manager.yield();
    EXPECT_EQ(taken, 0);
    mailbox.put(7);
    consumer.join();
    EXPECT_EQ(taken, 7);
}

void take_from_an_empty_mailbox() {
    fib::FiberManager manager;
    Mailbox<int> mailbox;
    mailbox.take();
}

TEST(L02_Ex3MailboxDeathTest, ADeadlockReportNamesTheMailboxAFiberWaitsIn) {
    EXPECT_DEATH(take_from_an_empty_mailbox(), "fiber 0 \\(main\\): in Mailbox::take, on 0x[0-9a-f]+");
}
