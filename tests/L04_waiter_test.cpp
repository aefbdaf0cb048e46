// L04_waiter_test.cpp — lesson 4: the Waiter. A fiber waiting on an fd stays parked until the fd
// is ready and gets poll's revents (POLLIN, POLLOUT, POLLHUP, POLLERR, POLLNVAL); a reader and a
// writer share one fd; ready fibers wake in registration order; an idle thread costs one blocking
// poll, and no poll blocks while other fibers are ready; ~Waiter waits for every fiber. Misuse
// and a deadlock with a parked Waiter are in tests/L04_waiter_misuse_test.cpp.
#include <gtest/gtest.h>
#include <poll.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cerrno>
#include <chrono>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "L02_schedule.hpp"
#include "L04_waiter_harness.hpp"
#include "fib/fiber.hpp"
#include "fib/io.hpp"
#include "fib/unique_fd.hpp"
#include "fib/waiter.hpp"

namespace {

using namespace l04_waiter;

// A fiber waits on `fd` for `events` while another closes `other`; returns what the wait got.
short wait_while_another_fiber_closes(fib::Waiter& waiter, int fd, short events,
                                      fib::UniqueFd& other) {
    short revents = 0;
    fib::Fiber waiting([&] { revents = waiter.wait(fd, events); });
    fib::Fiber closer([&] { other.reset(); });
    waiting.join();
    closer.join();
    return revents;
}

TEST(L04_Waiter, ReaderStaysParkedUntilAnotherFiberWritesThenGetsPollinAndTheByte) {
    fib::FiberManager manager;
    fib::Waiter waiter;
    Pair pipe = make_fds();
    short revents = 0;
    char got = 0;
    fib::Fiber reader([&] {
        revents = waiter.wait(pipe.first.get(), POLLIN);
        EXPECT_EQ(::read(pipe.first.get(), &got, 1), 1);
    });
    for (int i = 0; i < 10; ++i) fib::this_fiber::yield();
    EXPECT_EQ(revents, 0);
    EXPECT_EQ(waiter.stats().waiting, 1u);
    EXPECT_EQ(waiter.stats().blocking_polls, 0u);  // main was ready at every poll
    fib::Fiber writer([&] { EXPECT_EQ(::write(pipe.second.get(), "x", 1), 1); });
    writer.join();
    reader.join();
    EXPECT_EQ(revents, POLLIN);
    EXPECT_EQ(got, 'x');
    EXPECT_EQ(waiter.stats().wakeups, 1u);
    EXPECT_EQ(waiter.stats().waiting, 0u);
}

// One socket: "reader" waits POLLIN and "writer" POLLOUT on it at the same time. The writer wakes
// first (the socket is writable), sends 'a'; the peer fiber answers 'b', which wakes the reader.
TEST(L04_Waiter, ReaderAndWriterOnTheSameFdBothWakeWithTheirOwnEvent) {
    EXPECTS_FIFO_ORDER();
    fib::FiberManager manager;
    fib::Waiter waiter;
    Pair socket = make_fds(true);
    const int fd = socket.first.get();
    short read_revents = 0, write_revents = 0;
    char got = 0, peer_got = 0;
    fib::Fiber reader([&] {
        read_revents = waiter.wait(fd, POLLIN);
        EXPECT_EQ(::read(fd, &got, 1), 1);
    });
    fib::Fiber writer([&] {
        write_revents = waiter.wait(fd, POLLOUT);
        EXPECT_EQ(::write(fd, "a", 1), 1);
    });
    fib::this_fiber::yield();
    EXPECT_EQ(waiter.stats().waiting, 2u);
    fib::Fiber peer([&] {
        EXPECT_EQ(fib::io::read(socket.second.get(), &peer_got, 1), 1);
        EXPECT_EQ(fib::io::write_all(socket.second.get(), "b", 1), 1);
    });
    reader.join();
    writer.join();
    peer.join();
    EXPECT_EQ(write_revents, POLLOUT);
    EXPECT_EQ(read_revents, POLLIN);
    EXPECT_EQ(peer_got, 'a');
    EXPECT_EQ(got, 'b');
    EXPECT_EQ(waiter.stats().waiting, 0u);
}

// One fiber waiting both ways holds the fd's reader and writer slots; it is woken once, with
// what is ready (a fresh socket is writable), and both slots are free again afterwards.
TEST(L04_Waiter, OneFiberWaitingBothWaysWakesOnceAndFreesBothDirections) {
    fib::FiberManager manager;
    fib::Waiter waiter;
    Pair socket = make_fds(true);
    const int fd = socket.first.get();
    short both_revents = 0, read_revents = 0, write_revents = 0;
    fib::Fiber both([&] { both_revents = waiter.wait(fd, POLLIN | POLLOUT); });
    both.join();
    EXPECT_EQ(both_revents, POLLOUT);
    EXPECT_EQ(waiter.stats().wakeups, 1u);
    ASSERT_EQ(::write(socket.second.get(), "x", 1), 1);
    fib::Fiber reader([&] { read_revents = waiter.wait(fd, POLLIN); });
    fib::Fiber writer([&] { write_revents = waiter.wait(fd, POLLOUT); });
    reader.join();
    writer.join();
    EXPECT_EQ(read_revents, POLLIN);
    EXPECT_EQ(write_revents, POLLOUT);
    EXPECT_EQ(waiter.stats().waiting, 0u);
}

// Linux reports a hang-up with nothing left to read as POLLHUP alone.
TEST(L04_Waiter, PipeWriteEndClosedByAnotherFiberDeliversPollhupToTheReader) {
    fib::FiberManager manager;
    fib::Waiter waiter;
    Pair pipe = make_fds();
    EXPECT_EQ(wait_while_another_fiber_closes(waiter, pipe.first.get(), POLLIN, pipe.second),
              POLLHUP);
    char byte;
    EXPECT_EQ(fib::io::read(pipe.first.get(), &byte, 1), 0);
}

TEST(L04_Waiter, SocketpairPeerClosedDeliversPollinAndPollhupAndReadGivesEof) {
    fib::FiberManager manager;
    fib::Waiter waiter;
    Pair socket = make_fds(true);
    EXPECT_EQ(wait_while_another_fiber_closes(waiter, socket.first.get(), POLLIN, socket.second),
              POLLIN | POLLHUP);
    char byte;
    EXPECT_EQ(fib::io::read(socket.first.get(), &byte, 1), 0);
}

// The pipe is filled first, so the writer really waits; closing the read end then gives POLLERR
// (and no POLLOUT: the pipe is still full).
TEST(L04_Waiter, WriteEndOfAPipeWhoseReadEndClosesGetsPollerr) {
    fib::FiberManager manager;
    fib::Waiter waiter;
    Pair pipe = make_fds();
    std::vector<char> chunk(65536, 'f');
    for (int i = 0; i < 1000 && ::write(pipe.second.get(), chunk.data(), chunk.size()) > 0; ++i) {
    }
    ASSERT_EQ(errno, EAGAIN);
    EXPECT_EQ(wait_while_another_fiber_closes(waiter, pipe.second.get(), POLLOUT, pipe.first),
              POLLERR);
}

TEST(L04_Waiter, WaitOnAnFdThatIsNotOpenGetsPollnval) {
    fib::FiberManager manager;
    fib::Waiter waiter;
    // The temporary pipe closes both its fds at the end of this line.
    const int closed_fd = make_fds().first.get();
    // Main waits itself: the Waiter's poll answers at once.
    EXPECT_EQ(waiter.wait(closed_fd, POLLIN), POLLNVAL);
}

// Main joins a fiber waiting on an empty pipe: nothing can run, so the Waiter blocks in the
// kernel. A helper thread waits until main's thread sleeps in a system call, then looks again
// every 20 ms for 400 ms, and only then writes the byte. The whole idle period costs exactly one
// call to the kernel: a loop that woke up now and then to look (poll with a timeout of 100 ms,
// say) would have made several.
TEST(L04_Waiter, IdleThreadBlocksInExactlyOnePollCall) {
    fib::FiberManager manager;
    fib::Waiter waiter;
    Pair pipe = make_fds();
    const pid_t main_tid = ::gettid();
    std::atomic<bool> slept{false}, slept_throughout{true};
    std::thread watcher([&] {
        for (int i = 0; i < 5000 && !in_system_call(main_tid); ++i)
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
        slept = in_system_call(main_tid);
        for (int look = 0; look < 20; ++look) {
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
            if (!in_system_call(main_tid)) slept_throughout = false;
        }
        // Written whatever was seen, so that the test ends either way.
        if (::write(pipe.second.get(), "w", 1) != 1) ADD_FAILURE() << "write failed";
    });
    char got = 0;
    fib::Fiber reader([&] { EXPECT_EQ(fib::io::read(pipe.first.get(), &got, 1), 1); });
    reader.join();
    watcher.join();
    EXPECT_TRUE(slept);
    EXPECT_TRUE(slept_throughout);
    EXPECT_EQ(got, 'w');
    const fib::WaiterStats stats = waiter.stats();
    EXPECT_EQ(stats.polls, 1u);
    EXPECT_EQ(stats.blocking_polls, 1u);
    EXPECT_EQ(stats.wakeups, 1u);
}

// A reader waits on a pipe while two fibers yield 100 times each and a writer writes the pipe
// after `writer_yields` yields; main joins them all. Returns the Waiter's stats.
// Each round of the queue the Waiter polls once, and while a yielder is ready that poll does not
// block: the first round is the reader registering, so the write made after the writer's n-th
// yield is seen by poll n + 1.
fib::WaiterStats poll_while_fibers_yield(int writer_yields) {
    constexpr int kYields = 100;
    fib::FiberManager manager;
    fib::Waiter waiter;
    Pair pipe = make_fds();
    char got = 0;
    fib::Fiber reader([&] { EXPECT_EQ(fib::io::read(pipe.first.get(), &got, 1), 1); });
    auto yielder = [] {
        for (int i = 0; i < kYields; ++i) fib::this_fiber::yield();
    };
    fib::Fiber first(yielder), second(yielder);
    fib::Fiber writer([&] {
        for (int i = 0; i < writer_yields; ++i) fib::this_fiber::yield();
        EXPECT_EQ(::write(pipe.second.get(), "y", 1), 1);
    });
    reader.join();
    first.join();
    second.join();
    writer.join();
    EXPECT_EQ(got, 'y');
    return waiter.stats();
}

TEST(L04_Waiter, NoPollBlocksWhileOtherFibersAreReady) {
    EXPECTS_FIFO_ORDER();
    const fib::WaiterStats midway = poll_while_fibers_yield(50);
    EXPECT_EQ(midway.polls, 51u);
    EXPECT_EQ(midway.blocking_polls, 0u);
    EXPECT_EQ(midway.wakeups, 1u);
    // Written last, after the yielders' end, with main in join: nobody else is ready, so that
    // one poll blocks (and returns at once: the byte is there).
    const fib::WaiterStats last = poll_while_fibers_yield(100);
    EXPECT_EQ(last.polls, 101u);
    EXPECT_EQ(last.blocking_polls, 1u);
    EXPECT_EQ(last.wakeups, 1u);
}

// Fiber i waits on pipe kPipeOf[i]: registration order is neither fd order nor write order.
// Main writes every pipe before the Waiter's first poll; one poll wakes all four, in the order
// poll(2) reports them: the order of its array, which is the order the fibers registered.
// (Another backend reports in an order of its own: this test is about poll's.)
TEST(L04_Waiter, FibersReadyInOnePollWakeInTheOrderTheyRegistered) {
    fib::FiberManager manager;
    fib::Waiter waiter;
    if (std::string(waiter.poller().name()) != "poll") GTEST_SKIP() << "the Waiter's backend is not poll";
    constexpr int kPipeOf[4] = {2, 0, 3, 1};
    std::vector<Pair> pipes;
    for (int i = 0; i < 4; ++i) pipes.push_back(make_fds());
    std::vector<int> order;
    std::vector<fib::Fiber> fibers;
    for (int i = 0; i < 4; ++i)
        fibers.emplace_back([&, i] {
            waiter.wait(pipes[kPipeOf[i]].first.get(), POLLIN);
            order.push_back(i);
        });
    fib::this_fiber::yield();
    ASSERT_EQ(waiter.stats().waiting, 4u);
    ASSERT_EQ(waiter.stats().polls, 0u);
    for (int p = 3; p >= 0; --p) ASSERT_EQ(::write(pipes[p].second.get(), "o", 1), 1);
    for (fib::Fiber& fiber : fibers) fiber.join();
    EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 3}));
    EXPECT_EQ(waiter.stats().polls, 1u);
    EXPECT_EQ(waiter.stats().wakeups, 4u);
}

// The Waiter leaves scope while a detached fiber still waits on a pipe: ~Waiter first waits for
// every fiber, so the writer's byte releases the reader and nothing hangs. The Waiter's own
// fiber, started by the reader's wait, has ended too: it is counted like any other.
TEST(L04_Waiter, DestructorWaitsForAFiberStillWaitingOnAPipe) {
    fib::FiberManager manager;
    Pair pipe = make_fds();
    bool finished = false;
    char got = 0;
    {
        fib::Waiter waiter;
        fib::Fiber([&] {
            EXPECT_EQ(fib::io::read(pipe.first.get(), &got, 1), 1);
            finished = true;
        }).detach();
        fib::Fiber([&] {
            for (int i = 0; i < 3; ++i) fib::this_fiber::yield();
            EXPECT_EQ(::write(pipe.second.get(), "d", 1), 1);
        }).detach();
    }
    EXPECT_TRUE(finished);
    EXPECT_EQ(got, 'd');
    EXPECT_EQ(fib::Waiter::current(), nullptr);
    EXPECT_EQ(manager.stats().spawned, 3u);
    EXPECT_EQ(manager.stats().finished, 3u);
    EXPECT_EQ(manager.stats().records, 0u);
}

// Nobody waits for an fd: the Waiter's fiber ends. The next wait starts it again, so each busy
// period (a wait, then none) costs one start, and a wait never finds the Waiter missing.
TEST(L04_Waiter, TheWaitersFiberEndsWhenNobodyWaitsAndStartsAgainAtTheNextWait) {
    fib::FiberManager manager;
    fib::Waiter waiter;
    Pair pipe = make_fds();
    EXPECT_EQ(waiter.stats().fibers_started, 0u);  // nobody has waited yet
    for (int round = 1; round <= 3; ++round) {
        char got = 0;
        fib::Fiber reader([&] { EXPECT_EQ(fib::io::read(pipe.first.get(), &got, 1), 1); });
        fib::this_fiber::yield();  // the reader waits; the Waiter's fiber is queued
        EXPECT_EQ(waiter.stats().waiting, 1u);
        ASSERT_EQ(::write(pipe.second.get(), "r", 1), 1);
        reader.join();
        EXPECT_EQ(got, 'r');
        manager.wait_for_all();  // nothing waits: the Waiter's fiber ends
        EXPECT_EQ(manager.stats().records, 0u);
        EXPECT_EQ(waiter.stats().fibers_started, static_cast<std::uint64_t>(round));
    }
}

}  // namespace
