// L04_close_test.cpp — lesson 4: closing an fd through io::close or UniqueFd tells the Waiter,
// which wakes a fiber still waiting on it with POLLNVAL (what poll(2) says of a closed fd),
// and an fd number reused after the close starts afresh.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

#include <vector>

#include "L04_waiter_harness.hpp"
#include "fib/io.hpp"
#include "fib/tcp.hpp"
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

// A fiber blocked in io::read on `number` is woken by io::close(number); before it runs again,
// another fiber opens a pipe that gets the same number and has a byte in it. The woken read
// must fail with EBADF and leave the new pipe's byte alone: retrying the call on the number
// would read another file's data.
TEST(L04_Close, AReadWokenByACloseFailsWithEbadfAndNeverTouchesTheReusedNumber) {
    fib::FiberManager manager;
    fib::Waiter waiter;
    Pair old_pipe = make_fds();
    const int number = old_pipe.first.release();
    ssize_t got = 0;
    int error = 0;
    char byte = 0;
    fib::Fiber reader([&] {
        got = fib::io::read(number, &byte, 1);
        error = errno;
    });
    fib::this_fiber::yield();  // the reader waits on `number`
    ASSERT_EQ(waiter.stats().waiting, 1u);
    ASSERT_EQ(fib::io::close(number), 0);
    Pair new_pipe = make_fds();
    ASSERT_EQ(new_pipe.first.get(), number);
    ASSERT_EQ(::write(new_pipe.second.get(), "n", 1), 1);
    reader.join();
    EXPECT_EQ(got, -1);
    EXPECT_EQ(error, EBADF);
    char left = 0;
    EXPECT_EQ(::read(new_pipe.first.get(), &left, 1), 1);  // still there: nobody took it
    EXPECT_EQ(left, 'n');
}

// The same for a writer: blocked in write_all on a full pipe, woken by the close of its
// number, it must not write the rest of its data into the new pipe that reuses the number.
TEST(L04_Close, AWriteWokenByACloseFailsWithEbadfAndWritesNothingToTheReusedNumber) {
    fib::FiberManager manager;
    fib::Waiter waiter;
    Pair old_pipe = make_fds();
    ASSERT_EQ(::fcntl(old_pipe.second.get(), F_SETPIPE_SZ, 4096), 4096);
    const int number = old_pipe.second.release();
    const std::vector<char> data(64 * 1024, 'w');
    ssize_t written = 0;
    int error = 0;
    fib::Fiber writer([&] {
        written = fib::io::write_all(number, data.data(), data.size());
        error = errno;
    });
    fib::this_fiber::yield();  // the writer filled the pipe and waits on `number`
    ASSERT_EQ(waiter.stats().waiting, 1u);
    ASSERT_EQ(fib::io::close(number), 0);
    old_pipe.first.reset();
    Pair new_pipe = make_fds();  // both numbers again: its write end is `number`
    EXPECT_EQ(new_pipe.second.get(), number);
    writer.join();
    EXPECT_EQ(written, -1);
    EXPECT_EQ(error, EBADF);
    char byte = 0;
    EXPECT_EQ(::read(new_pipe.first.get(), &byte, 1), -1);  // nothing was written to the new pipe
    EXPECT_EQ(errno, EAGAIN);
}

// An acceptor blocked on a listening socket whose number is closed and reused by a new
// listener with a connection pending: it must not accept that connection.
TEST(L04_Close, AnAcceptWokenByACloseFailsWithEbadfAndLeavesTheReusedNumbersConnection) {
    fib::FiberManager manager;
    fib::Waiter waiter;
    fib::UniqueFd old_listener = fib::tcp::listen("127.0.0.1", 0);
    const int number = old_listener.release();
    int accepted = 0, error = 0;
    fib::Fiber acceptor([&] {
        accepted = fib::io::accept(number, nullptr, nullptr);
        error = errno;
    });
    fib::this_fiber::yield();  // the acceptor waits on `number`
    ASSERT_EQ(fib::io::close(number), 0);
    fib::UniqueFd new_listener = fib::tcp::listen("127.0.0.1", 0);
    ASSERT_EQ(new_listener.get(), number);
    fib::UniqueFd client(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    const fib::tcp::Address address =
        fib::tcp::make_address("127.0.0.1", fib::tcp::local_port(new_listener.get()));
    ASSERT_EQ(::connect(client.get(), address.get(), address.length), 0);
    acceptor.join();
    EXPECT_EQ(accepted, -1);
    EXPECT_EQ(error, EBADF);
    const int pending = ::accept4(new_listener.get(), nullptr, nullptr, SOCK_CLOEXEC);
    EXPECT_GE(pending, 0);  // the connection waited for its own listener
    if (pending >= 0) ::close(pending);
}

}  // namespace
