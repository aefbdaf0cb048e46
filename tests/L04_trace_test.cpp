// L04_trace_test.cpp — lesson 4: FIB_TRACE shows the Waiter. Each poll is a slice on the
// Waiter fiber's track with its timeout and how many fds were ready, and a fiber parked in
// Waiter::wait is woken by the Waiter.
#include <gtest/gtest.h>
#include <poll.h>
#include <unistd.h>

#include <string>

#include "L02_schedule.hpp"
#include "L02_trace_file.hpp"
#include "L04_waiter_harness.hpp"
#include "fib/fiber.hpp"
#include "fib/waiter.hpp"

namespace {

using namespace l02_trace;
using namespace l04_waiter;

// Two readers (fibers 1 and 2) wait on two pipes, and the first wait starts
// the Waiter (fiber 4); a writer (fiber 3) writes to both and ends. Then
// nothing but the Waiter is ready: one blocking poll finds both pipes readable.
void two_readers_one_poll() {
    fib::FiberManager manager;
    fib::Waiter waiter;
    Pair first = make_fds(), second = make_fds();
    auto read_one = [&waiter](int fd) {
        waiter.wait(fd, POLLIN);
        char byte;
        if (::read(fd, &byte, 1) != 1) std::exit(2);
    };
    fib::Fiber one({.name = "reader"}, read_one, first.first.get());
    fib::Fiber two({.name = "reader"}, read_one, second.first.get());
    fib::Fiber writer({.name = "writer"}, [&] {
        if (::write(first.second.get(), "a", 1) != 1 || ::write(second.second.get(), "b", 1) != 1)
            std::exit(3);
    });
    one.join();
    two.join();
    writer.join();
}

TEST(L04_Trace, OneBlockingPollFindsBothPipesReady) {
    EXPECTS_FIFO_ORDER();  // counts the steps of one interleaving
    const std::string text = run_traced(trace_path("poll"), nullptr, two_readers_one_poll);
    EXPECT_EQ(count(text, "\"tid\":4,\"name\":\"thread_name\",\"args\":{\"name\":\"fiber 4 (waiter)\"}"), 1);
    EXPECT_EQ(count(text, "\"name\":\"poll\""), 1);
    EXPECT_EQ(count(text, "\"tid\":4,\"ts\""), 7);  // ready, running, ready, running; poll; spawn, end
    EXPECT_EQ(count(text, "\"name\":\"poll\",\"cat\":\"span\",\"args\":{\"timeout_ms\":-1,\"ready\":2}"), 1);
}

TEST(L04_Trace, AReaderParkedInWaiterWaitIsWokenByTheWaiter) {
    EXPECTS_FIFO_ORDER();  // counts the steps of one interleaving
    const std::string text = run_traced(trace_path("reader"), nullptr, two_readers_one_poll);
    EXPECT_EQ(count(text, "\"name\":\"parked: Waiter::wait (read)\",\"cat\":\"parked\",\"args\":{\"site\":"
                          "\"Waiter::wait (read)\",\"by\":\"fiber 4 (waiter)\"}"),
              2);
    EXPECT_EQ(count(text, "\"name\":\"wake\",\"cat\":\"wake\",\"args\":{\"by\":\"fiber 4 (waiter)\"}"), 2);
    EXPECT_EQ(instants(text), "spawn/1 spawn/2 spawn/3 spawn/4 end/3 wake/1 wake/2 end/1 wake/0 end/2 end/4");
}

}  // namespace
