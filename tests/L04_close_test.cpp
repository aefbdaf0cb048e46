// L04_close_test.cpp — lesson 4: closing an fd through io::close or UniqueFd tells the Waiter,
// which wakes a fiber still waiting on it with POLLNVAL (what poll(2) says of a closed fd),
// and an fd number reused after the close starts afresh.
#include <gtest/gtest.h>
#include <poll.h>
#include <unistd.h>

#include <vector>

#include "L04_waiter_harness.hpp"
#include "fib/io.hpp"
#include "fib/waiter.hpp"

namespace {

using namespace l04_waiter;

TEST(L04_Close, IoCloseWakesTheFiberWaitingOnTheFdWithPollnval) {
    fib::FiberManager manager;
    fib::Waiter waiter;
    Pair pipe = make_fds();
    const int fd = pipe.first.release();
    short revents = 0;
    fib::Fiber reader([&] { revents = waiter.wait(fd, POLLIN); });
    fib::this_fiber::yield();  // the reader is now waiting
    ASSERT_EQ(waiter.stats().waiting, 1u);
    EXPECT_EQ(fib::io::close(fd), 0);
    reader.join();
    EXPECT_EQ(revents, POLLNVAL);
    EXPECT_EQ(waiter.stats().waiting, 0u);
}

TEST(L04_Close, UniqueFdResetClosesThroughTheWaiter) {
    fib::FiberManager manager;
    fib::Waiter waiter;
    Pair pipe = make_fds();
    short revents = 0;
    fib::Fiber reader([&] { revents = waiter.wait(pipe.first.get(), POLLIN); });
    fib::this_fiber::yield();
    pipe.first.reset();
    reader.join();
    EXPECT_EQ(revents, POLLNVAL);
}

// The old pipe is still readable (its data was never read) when its read end is closed and
// a new pipe gets the same fd number: a fiber waiting on the new fd wakes only when the new
// pipe gets data, and the order of events proves it.
TEST(L04_Close, AReusedFdNumberDoesNotGetTheClosedFdsReadiness) {
    fib::FiberManager manager;
    fib::Waiter waiter;
    Pair old_pipe = make_fds();
    std::vector<const char*> order;
    fib::Fiber first([&] { waiter.wait(old_pipe.first.get(), POLLIN); });
    ASSERT_EQ(::write(old_pipe.second.get(), "x", 1), 1);
    first.join();  // the Waiter has seen the old fd readable
    // Keep the old pipe's file open through a duplicate, still readable, then close the
    // number and reuse it for a fresh pipe.
    fib::UniqueFd old_alive(::dup(old_pipe.first.get()));
    const int number = old_pipe.first.get();
    old_pipe.first.reset();
    Pair new_pipe = make_fds();
    ASSERT_EQ(new_pipe.first.get(), number);
    fib::Fiber second([&] {
        waiter.wait(new_pipe.first.get(), POLLIN);
        order.push_back("woken");
    });
    for (int i = 0; i < 5; ++i) fib::this_fiber::yield();  // the Waiter polls meanwhile
    order.push_back("written");
    ASSERT_EQ(::write(new_pipe.second.get(), "y", 1), 1);
    second.join();
    EXPECT_EQ(order, (std::vector<const char*>{"written", "woken"}));
}

}  // namespace
