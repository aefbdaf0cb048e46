// L11_uring_test.cpp — lesson 11: the ownership protocol of fib::io on an io_uring. An
// operation ends only with its CQE: io::close cancels and drains the fd's operations before
// the number can be reused (submitted or not yet submitted), a cancel and a deadline wait for
// the CQE before the fiber's frame and stack go (100,000 times, with the stack reused at once,
// and with data racing the cancel), a CQ far smaller than the completions loses none, the
// destructor cancels and waits, and the POLL_ADD path serves Waiter::wait, wait_any and an
// Event set from another thread. Each test skips, saying why, where the Waiter fell back to
// epoll (make test-lesson11's second run, under scripts/without-io-uring.py).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "L01_sanitizers.hpp"
#include "L02_schedule.hpp"
#include "L04_waiter_harness.hpp"
#include "L11_uring_harness.hpp"
#include "fib/cancel.hpp"
#include "fib/condvar.hpp"
#include "fib/event.hpp"
#include "fib/fiber.hpp"
#include "fib/io.hpp"
#include "fib/timer_heap.hpp"
#include "fib/uring_poller.hpp"
#include "fib/wait_any.hpp"
#include "fib/unique_fd.hpp"
#include "fib/waiter.hpp"

namespace {

using namespace std::chrono_literals;
using namespace l04_waiter;
using namespace l11_uring;

// ---- io::close under a read the ring holds ------------------------------------------------

// What the reader's io::read ended with, and what it read.
struct ReadEnd {
    long result = 1;
    int error = 0;
    char bytes[16] = {};
};

// A fiber reads `number`; a second fiber closes it and at once makes a socketpair that gets the
// same number, with bytes in it. `submitted_first`: the Waiter has handed the read to the kernel
// before the close; otherwise the read's SQE is still in the SQ (reader and closer run in the
// same turn, before the Waiter's next enter). The read must end with EBADF, and the new
// socket's bytes must still be there.
void close_under_a_read(const char* backend, bool submitted_first) {
    EXPECTS_FIFO_ORDER();  // which of reader and closer runs first decides what is submitted
    fib::FiberManager manager;
    fib::Waiter waiter(backend);
    SKIP_WITHOUT_RING(waiter);
    fib::UringPoller& ring = *ring_of(waiter);
    Pair old_pair = make_fds(true);
    const int number = old_pair.first.release();
    ReadEnd end;
    Pair fresh;
    bool sqe_was_unsubmitted = false;
    fib::Fiber reader({.name = "reader"}, [&] {
        end.result = fib::io::read(number, end.bytes, sizeof end.bytes);
        end.error = errno;
    });
    if (submitted_first) {
        ASSERT_TRUE(yield_until([&] { return submitted(ring, 1); }));
    }
    fib::Fiber closer({.name = "closer"}, [&] {
        sqe_was_unsubmitted = ring.in_flight() == 1 && ring.ring().unsubmitted() > 0;
        ASSERT_EQ(fib::io::close(number), 0);
        fresh = make_fds(true);
        ASSERT_EQ(fresh.first.get(), number);
        ASSERT_EQ(::write(fresh.second.get(), "new!", 4), 4);
    });
    closer.join();
    // Were the old read still in the kernel, the old socket's end of file would end it now,
    // with 0; it must have ended already.
    old_pair.second.reset();
    reader.join();
    EXPECT_EQ(sqe_was_unsubmitted, !submitted_first);
    EXPECT_EQ(end.result, -1);
    EXPECT_EQ(end.error, EBADF);
    EXPECT_EQ(std::string(end.bytes), "");
    EXPECT_EQ(ring.in_flight(), 0u);
    char left[8] = {};
    EXPECT_EQ(::read(fresh.first.get(), left, sizeof left), 4);  // nobody took them
    EXPECT_EQ(std::string(left), "new!");
}

TEST(L11_Close, ASubmittedReadEndsWithEbadfAndNeverSeesTheBytesOfTheReusedNumber) {
    close_under_a_read("uring", true);
}

// One enter per operation: the read is in the kernel as soon as the fiber parks.
TEST(L11_Close, ASubmittedReadEndsWithEbadfOnTheRungWithAnEnterPerOperation) {
    close_under_a_read("uring-ops", true);
}

// The dangerous case (liburing's issue 363): the SQE names the fd by number, and the kernel
// looks the number up when it is submitted. Submitted after the close, it would read the new
// socket's bytes.
TEST(L11_Close, AReadWhoseSqeIsNotSubmittedYetEndsWithEbadfAndNeverReadsTheReusedNumber) {
    close_under_a_read("uring", false);
}

TEST(L11_Close, AnUnsubmittedReadEndsWithEbadfOnTheRungWithoutDeferTaskrun) {
    close_under_a_read("uring-batch", false);
}

// ---- Cancels: the fiber waits for the CQE ---------------------------------------------------

// 100,000 times: a fiber parks in io::read with its buffer on its own stack, the Waiter hands
// the read to the kernel, the fiber is cancelled and joined, and the next fiber gets the same
// stack at once. Each read ends with ECANCELED and leaves nothing in flight when io::read
// returns: the CQE was in before the frame went. (Were it not, the CQE would later write into the next fiber's frame:
// make SAN=1 with detect_stack_use_after_return names it.)
TEST(L11_Cancel, AHundredThousandCancelledReadsEachWaitForTheirCqeBeforeTheStackIsReused) {
    fib::FiberManager manager;
    fib::Waiter waiter("uring");
    SKIP_WITHOUT_RING(waiter);
    fib::UringPoller& ring = *ring_of(waiter);
    Pair pair = make_fds(true);
    const int fd = pair.first.get();
    // ThreadSanitizer keeps state per fiber it is told of, and 100,000 of them exhaust it.
    constexpr int kRounds = UNDER_THREAD_SANITIZER ? 2'000 : 100'000;
    int cancelled = 0, not_in_kernel = 0, left_in_flight = 0;
    for (int round = 0; round < kRounds; ++round) {
        long result = 1;
        int error = 0;
        std::size_t in_flight_at_return = 99;
        fib::Fiber reader({.name = "reader"}, [&] {
            char buffer[64];
            result = fib::io::read(fd, buffer, sizeof buffer);
            error = errno;
            in_flight_at_return = ring.in_flight();
        });
        if (!yield_until([&] { return submitted(ring, 1); })) ++not_in_kernel;
        reader.cancel();
        reader.join();
        if (result == -1 && error == ECANCELED) ++cancelled;
        if (in_flight_at_return != 0 || ring.in_flight() != 0) ++left_in_flight;
        if (not_in_kernel + left_in_flight > 0 || cancelled != round + 1) break;
    }
    EXPECT_EQ(not_in_kernel, 0);
    EXPECT_EQ(left_in_flight, 0);
    EXPECT_EQ(cancelled, kRounds);
    // The stacks went back to the pool and came out again: a couple, not one per round.
    EXPECT_LE(manager.stats().stacks_created, 4u);
}

// The peer writes while the cancel is under way: sometimes the read completes before the
// cancel reaches it. Then its bytes are real and were taken from the socket, so io::read
// returns them; otherwise ECANCELED, and the bytes stay in the socket for the next read.
// Every byte written arrives, once, in order.
TEST(L11_Cancel, DataRacingACancelIsEitherReturnedOrLeftInTheSocketNeverLost) {
    fib::FiberManager manager;
    fib::Waiter waiter("uring");
    SKIP_WITHOUT_RING(waiter);
    fib::UringPoller& ring = *ring_of(waiter);
    Pair pair = make_fds(true);
    const int fd = pair.first.get();
    std::string sent, received;
    int returned_data = 0, returned_cancelled = 0, other = 0;
    for (int round = 0; round < (UNDER_THREAD_SANITIZER ? 2'000 : 10'000) && other == 0; ++round) {
        long result = 1;
        int error = 0;
        bool finished = false;
        std::size_t in_flight_at_return = 99;
        fib::Fiber reader({.name = "reader"}, [&] {
            char buffer[7];
            result = fib::io::read(fd, buffer, sizeof buffer);
            error = errno;
            in_flight_at_return = ring.in_flight();
            if (result > 0) received.append(buffer, static_cast<std::size_t>(result));
            finished = true;
        });
        if (!yield_until([&] { return finished || submitted(ring, 1); })) ++other;
        // Five bytes numbered by the round; every third round writes none.
        if (round % 3 != 2) {
            char chunk[16];
            std::snprintf(chunk, sizeof chunk, "%05d", round % 100000);
            if (::write(pair.second.get(), chunk, 5) != 5) ++other;
            sent.append(chunk, 5);
        }
        // No yield, one, or two: the read's completion runs before the cancel, or not.
        for (int i = 0; i < round % 3; ++i) fib::this_fiber::yield();
        reader.cancel();
        reader.join();
        if (result > 0) ++returned_data;
        else if (result == -1 && error == ECANCELED) ++returned_cancelled;
        else ++other;
        if (in_flight_at_return != 0 || ring.in_flight() != 0) ++other;
    }
    char rest[4096];
    for (ssize_t n; (n = ::read(fd, rest, sizeof rest)) > 0;) received.append(rest, static_cast<std::size_t>(n));
    EXPECT_EQ(other, 0);
    EXPECT_GT(returned_data, 0);
    EXPECT_GT(returned_cancelled, 0);
    ASSERT_EQ(received.size(), sent.size());
    EXPECT_TRUE(received == sent) << "first difference at byte "
                                  << std::mismatch(sent.begin(), sent.end(), received.begin()).first - sent.begin();
}

// ---- Deadlines ------------------------------------------------------------------------------

// wait_any.hpp's io::read with a timeout, on the ring: ETIMEDOUT, once the read's CQE is in
// (nothing in flight when it returns), no timer left, and the socket's next byte is still there
// for the next read.
TEST(L11_Timeout, ATimedReadEndsWithEtimedoutOnlyOnceItsCqeIsIn) {
    fib::FiberManager manager;
    fib::Waiter waiter("uring");
    SKIP_WITHOUT_RING(waiter);
    fib::UringPoller& ring = *ring_of(waiter);
    Pair pair = make_fds(true);
    long result = 1;
    int error = 0;
    std::size_t in_flight_at_return = 99;
    fib::Fiber reader({.name = "timed-reader"}, [&] {
        char buffer[16];
        result = fib::io::read(pair.first.get(), buffer, sizeof buffer, 20ms);
        error = errno;
        in_flight_at_return = ring.in_flight();
    });
    reader.join();
    EXPECT_EQ(result, -1);
    EXPECT_EQ(error, ETIMEDOUT);
    EXPECT_EQ(in_flight_at_return, 0u);
    EXPECT_EQ(fib::TimerHeap::of_this_thread().size(), 0u);
    ASSERT_EQ(::write(pair.second.get(), "b", 1), 1);
    char byte = 0;
    fib::Fiber next([&] { result = fib::io::read(pair.first.get(), &byte, 1, 1h); });
    next.join();
    EXPECT_EQ(result, 1);
    EXPECT_EQ(byte, 'b');
}

// send_all with a timeout to a peer that never reads: ETIMEDOUT once the SEND's CQE is in. The
// data was on the sending fiber's stack; the next fiber reuses that stack and scribbles over
// it, and what the peer then finds in the socket is a prefix of the data, never the scribble.
TEST(L11_Timeout, ASendAllToAPeerThatNeverReadsEndsWithEtimedoutAndItsStackIsReusable) {
    fib::FiberManager manager;
    fib::Waiter waiter("uring");
    SKIP_WITHOUT_RING(waiter);
    fib::UringPoller& ring = *ring_of(waiter);
    Pair pair = make_fds(true);
    const int small = 4096;
    ASSERT_EQ(::setsockopt(pair.first.get(), SOL_SOCKET, SO_SNDBUF, &small, sizeof small), 0);
    ASSERT_EQ(::setsockopt(pair.second.get(), SOL_SOCKET, SO_RCVBUF, &small, sizeof small), 0);
    constexpr std::size_t kSize = 24 * 1024;
    auto pattern = [](std::size_t i) { return static_cast<char>('a' + i % 26); };
    long result = 1;
    int error = 0;
    std::size_t in_flight_at_return = 99;
    fib::Fiber sender({.name = "sender"}, [&] {
        char data[kSize];
        for (std::size_t i = 0; i < kSize; ++i) data[i] = pattern(i);
        result = fib::io::send_all(pair.first.get(), data, sizeof data, 20ms);
        error = errno;
        in_flight_at_return = ring.in_flight();
    });
    sender.join();
    EXPECT_EQ(result, -1);
    EXPECT_EQ(error, ETIMEDOUT);
    EXPECT_EQ(in_flight_at_return, 0u);
    EXPECT_EQ(fib::TimerHeap::of_this_thread().size(), 0u);
    fib::Fiber scribbler([&] {
        char junk[kSize];
        std::memset(junk, 'Z', sizeof junk);
        asm volatile("" : : "r"(junk) : "memory");
        for (int i = 0; i < 3; ++i) fib::this_fiber::yield();  // the Waiter's turns meanwhile
    });
    scribbler.join();
    std::string got;
    char buffer[4096];
    for (ssize_t n; (n = ::read(pair.second.get(), buffer, sizeof buffer)) > 0;)
        got.append(buffer, static_cast<std::size_t>(n));
    EXPECT_GT(got.size(), 0u);
    ASSERT_LT(got.size(), kSize);
    std::size_t wrong = 0;
    for (std::size_t i = 0; i < got.size(); ++i) wrong += got[i] != pattern(i);
    EXPECT_EQ(wrong, 0u);
}

// ---- A CQ far smaller than what completes at once -------------------------------------------

// Sets an environment variable for the life of the object, as it was before afterwards.
class ScopedEnv {
public:
    ScopedEnv(const char* name, const char* value) : name_(name) {
        if (const char* old = std::getenv(name)) old_ = old, had_ = true;
        ::setenv(name, value, 1);
    }
    ~ScopedEnv() {
        if (had_) ::setenv(name_, old_.c_str(), 1);
        else ::unsetenv(name_);
    }

private:
    const char* name_;
    std::string old_;
    bool had_ = false;
};

// A ring of 2 SQEs and 4 CQEs; 300 fibers each read a socketpair of its own in 4-byte pieces,
// and every peer gets its 12 bytes at once. The completions overflow the CQ (the kernel keeps
// them, FEAT_NODROP) and the SQ fills at every turn: every fiber gets its own bytes, in order.
TEST(L11_Overflow, ThreeHundredReadersOnARingOfTwoEntriesGetEveryByteInOrder) {
    fib::FiberManager manager;
    std::unique_ptr<fib::Waiter> waiter;
    {
        const ScopedEnv tiny("FIB_URING_ENTRIES", "2");
        waiter = std::make_unique<fib::Waiter>("uring");
    }
    SKIP_WITHOUT_RING(*waiter);
    fib::UringPoller& ring = *ring_of(*waiter);
    constexpr int kReaders = 300;
    constexpr std::size_t kBytes = 12;
    std::vector<Pair> pairs;
    std::vector<std::string> got(kReaders);
    std::vector<fib::Fiber> readers;
    readers.reserve(kReaders);
    for (int i = 0; i < kReaders; ++i) pairs.push_back(make_fds(true));
    auto message = [](int i) {
        char text[32];
        std::snprintf(text, sizeof text, "<%04d-%05d>", i % 10000, i * 7 % 100000);
        return std::string(text, kBytes);
    };
    for (int i = 0; i < kReaders; ++i)
        readers.emplace_back([&, i] {
            char piece[4];
            while (got[i].size() < kBytes) {
                const ssize_t n = fib::io::read(pairs[i].first.get(), piece, sizeof piece);
                if (n <= 0) return;
                got[i].append(piece, static_cast<std::size_t>(n));
            }
        });
    ASSERT_TRUE(yield_until([&] { return submitted(ring, kReaders); }));
    for (int i = 0; i < kReaders; ++i)
        ASSERT_EQ(::write(pairs[i].second.get(), message(i).data(), kBytes), static_cast<ssize_t>(kBytes));
    for (fib::Fiber& reader : readers) reader.join();
    int intact = 0;
    for (int i = 0; i < kReaders; ++i) intact += got[i] == message(i);
    EXPECT_EQ(intact, kReaders);
    EXPECT_EQ(ring.in_flight(), 0u);
    pairs.clear();
    readers.clear();
}

// ---- The destructor ---------------------------------------------------------------------------

// A UringPoller made by hand, a READ on an empty pipe submitted from main, and the poller
// destroyed: its destructor cancelled the read and waited for the CQE, so the record says done
// and -ECANCELED, and the buffer is never written afterwards.
TEST(L11_Shutdown, TheDestructorCancelsAnOperationInFlightAndWaitsForItsCqe) {
    fib::FiberManager manager;
    auto poller = std::make_unique<fib::UringPoller>(fib::UringOptions{"uring", true, true, true});
    if (!poller->ok())
        GTEST_SKIP() << "io_uring is refused here: io_uring_setup says " << std::strerror(poller->error());
    Pair pipe = make_fds();
    char buffer[8] = {};
    fib::UringOp op;
    op.fd = pipe.first.get();
    op.what = "a test's read";
    io_uring_sqe& sqe = poller->prepare(op, IORING_OP_READ);
    sqe.addr = reinterpret_cast<std::uintptr_t>(buffer);
    sqe.len = sizeof buffer;
    sqe.off = ~std::uint64_t{0};
    poller->submit();
    ASSERT_EQ(poller->in_flight(), 1u);
    ASSERT_FALSE(op.done);
    poller.reset();
    EXPECT_TRUE(op.done);
    EXPECT_EQ(op.result, -ECANCELED);
    ASSERT_EQ(::write(pipe.second.get(), "late", 4), 4);
    char left[8] = {};
    EXPECT_EQ(::read(pipe.first.get(), left, sizeof left), 4);  // the pipe kept them
    EXPECT_EQ(std::string(buffer, sizeof buffer), std::string(sizeof buffer, '\0'));
}

// ---- The POLL_ADD path: Waiter::wait, wait_any, and an Event from another thread ---------------

// One fiber, three sources, three rounds: a pipe, an Event set by another thread (through its
// eventfd, which the ring polls), and a second pipe; each round's source is the one that
// fired, and the thread blocked in io_uring_enter in between.
TEST(L11_Poll, WaitAnyOnTheRingWakesForEachSourceAndForAnEventSetFromAnotherThread) {
    fib::FiberManager manager;
    fib::Waiter waiter("uring");
    SKIP_WITHOUT_RING(waiter);
    Pair a = make_fds(), b = make_fds();
    fib::Event mail;
    fib::CondVar round_done;
    std::vector<int> order;
    fib::Fiber waiting({.name = "wait_any"}, [&] {
        for (int round = 0; round < 3; ++round) {
            const fib::Ready ready = fib::wait_any({{a.first.get(), POLLIN}, {b.first.get(), POLLIN}, mail});
            order.push_back(ready.index);
            char byte;
            const bool consumed = ready.index == 0   ? ::read(a.first.get(), &byte, 1) == 1
                                  : ready.index == 1 ? ::read(b.first.get(), &byte, 1) == 1
                                                     : mail.try_wait();
            EXPECT_TRUE(consumed) << "source " << ready.index << " revents " << ready.revents;
            round_done.notify_one();
        }
    });
    auto parked_on_all_three = [&] { return waiter.stats().waiting == 3; };
    ASSERT_TRUE(yield_until(parked_on_all_three));
    ASSERT_EQ(::write(b.second.get(), "b", 1), 1);
    ASSERT_TRUE(yield_until([&] { return order.size() == 1 && parked_on_all_three(); }));
    // Main parks until the second round is done: nothing is ready, so the Waiter blocks in
    // io_uring_enter until the other thread's eventfd write completes the poll.
    const std::uint64_t blocking_before = waiter.stats().blocking_polls;
    std::thread setter([&] { mail.set(); });
    while (order.size() < 2) round_done.wait();
    setter.join();
    EXPECT_GT(waiter.stats().blocking_polls, blocking_before);
    ASSERT_TRUE(yield_until(parked_on_all_three));
    ASSERT_EQ(::write(a.second.get(), "a", 1), 1);
    waiting.join();
    EXPECT_EQ(order, (std::vector<int>{1, 2, 0}));
    EXPECT_EQ(waiter.stats().waiting, 0u);
}

// A reader waits for POLLIN on a socket whose send buffer is full; a writer then waits for
// POLLOUT on the same fd, so the ring's POLL_ADD for POLLIN is removed and replaced by one for
// POLLIN|POLLOUT. The removed poll's own CQE (-ECANCELED) comes while the new poll is armed, and
// belongs to a generation that is gone: it must wake neither fiber (as POLLERR it would wake
// both). The writer wakes only once the peer makes room, the reader only for the byte written
// after that.
TEST(L11_Poll, AReplacedPollsLateCqeWakesNeitherFiberWaitingOnTheFd) {
    fib::FiberManager manager;
    fib::Waiter waiter("uring");
    SKIP_WITHOUT_RING(waiter);
    fib::UringPoller& ring = *ring_of(waiter);
    Pair pair = make_fds(true);
    const int fd = pair.first.get();
    const std::string chunk(4096, 'f');
    int filled = 0;
    while (filled < 10'000 && ::send(fd, chunk.data(), chunk.size(), MSG_DONTWAIT) > 0) ++filled;
    ASSERT_LT(filled, 10'000);
    std::vector<std::string> order;
    short reader_revents = 0, writer_revents = 0;
    fib::Fiber reader({.name = "reader"}, [&] {
        reader_revents = waiter.wait(fd, POLLIN);
        order.push_back("reader woke");
    });
    ASSERT_TRUE(yield_until([&] { return waiter.stats().waiting == 1 && ring.ring().unsubmitted() == 0; }));
    fib::Fiber writer({.name = "writer"}, [&] {
        writer_revents = waiter.wait(fd, POLLOUT);
        order.push_back("writer woke");
    });
    for (int i = 0; i < 10; ++i) fib::this_fiber::yield();  // the Waiter's turns: the late CQE comes in
    order.push_back("room made");
    char drain[4096];
    while (::recv(pair.second.get(), drain, sizeof drain, MSG_DONTWAIT) > 0) {
    }
    writer.join();
    order.push_back("byte written");
    ASSERT_EQ(::write(pair.second.get(), "r", 1), 1);
    reader.join();
    EXPECT_EQ(order, (std::vector<std::string>{"room made", "writer woke", "byte written", "reader woke"}));
    EXPECT_EQ(writer_revents, POLLOUT);
    EXPECT_EQ(reader_revents, POLLIN);
}

// The lost CQE behind L09_Cluster.APostToAFullThreadParksThePosterUntilAPostedFiberEnds's
// rare hang on the uring rung, made to happen every time on a UringPoller made by hand. A poll
// on an eventfd is armed; another thread writes the eventfd, which wakes the poll in the kernel,
// but under DEFER_TASKRUN its completion waits (as task work) for this thread's next enter; this
// thread reads the counter (what Event::try_wait does) and takes the poll back. In that enter
// the kernel runs the removal first: the woken poll is owned by its pending completion, so a
// POLL_REMOVE only says -EALREADY; then the completion runs, polls the eventfd again, finds the
// counter at 0 and re-arms the one-shot poll without a CQE. The poll stays in the kernel, one
// CQE short, for good: a cluster thread closed that eventfd and its ring's destructor waited
// for that CQE for ever. Every SQE must get its CQE; the rungs without DEFER_TASKRUN run the
// same steps.
void every_sqe_of_a_taken_back_poll_gets_its_cqe(const char* backend, bool defer_taskrun) {
    fib::FiberManager manager;
    auto poller = std::make_unique<fib::UringPoller>(fib::UringOptions{backend, true, true, defer_taskrun});
    if (!poller->ok())
        GTEST_SKIP() << "io_uring is refused here: io_uring_setup says " << std::strerror(poller->error());
    const int eventfd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    ASSERT_GE(eventfd, 0);
    std::vector<fib::PollEvent> ready;
    for (int round = 0; round < 100; ++round) {
        poller->watch(eventfd, POLLIN);
        poller->wait(0, ready);  // the POLL_ADD is in the kernel
        ASSERT_EQ(poller->ring().unsubmitted(), 0u);
        std::thread([eventfd] {
            const std::uint64_t one = 1;
            EXPECT_EQ(::write(eventfd, &one, sizeof one), static_cast<ssize_t>(sizeof one));
        }).join();
        std::uint64_t count = 0;
        ASSERT_EQ(::read(eventfd, &count, sizeof count), static_cast<ssize_t>(sizeof count));
        poller->watch(eventfd, 0);
        // A few turns, each free to wait a little: every CQE due has come by then.
        for (int turn = 0; turn < 20 && poller->ring().stats().completed < poller->ring().stats().submitted; ++turn)
            poller->wait(10, ready);
        const fib::RingStats stats = poller->ring().stats();
        if (stats.completed != stats.submitted) {
            // The destructor would wait for the missing CQE for ever, as the cluster thread did;
            // the ring is left behind instead (the test has failed anyway).
            ADD_FAILURE() << "round " << round << ": " << stats.submitted << " SQEs, " << stats.completed
                          << " CQEs: a poll was taken back and its CQE never came";
            (void)poller.release();
            ::close(eventfd);
            return;
        }
        // The fd was not woken for: its waiter took it back before the Waiter looked.
        ready.clear();
    }
    poller.reset();
    ::close(eventfd);
}

TEST(L11_Poll, EverySqeOfAPollTakenBackAfterItsWakeUpGetsItsCqeUnderDeferTaskrun) {
    every_sqe_of_a_taken_back_poll_gets_its_cqe("uring", true);
}

TEST(L11_Poll, EverySqeOfAPollTakenBackAfterItsWakeUpGetsItsCqeWithoutDeferTaskrun) {
    every_sqe_of_a_taken_back_poll_gets_its_cqe("uring-batch", false);
}

// A ring that is closed is not done with its thread: the kernel's clean-up later queues work
// on every thread that submitted to it and runs it by interrupting that thread's next system
// call, and a blocking call with a timeout fails with EINTR. So a thread keeps its drained
// ring for its next Waiter (uring_poller.cpp). 200 Waiters made, used and destroyed on this
// thread, each followed by a blocking recv under SO_RCVTIMEO that a thread answers a moment
// later: no recv may fail with EINTR. (Closing each ring made 60 to 80 of them fail.)
TEST(L11_Shutdown, AWaiterGoneLeavesNoKernelWorkToInterruptTheThreadsLaterBlockingCalls) {
    {
        fib::FiberManager manager;
        fib::Waiter waiter("uring");
        SKIP_WITHOUT_RING(waiter);
    }
    int interrupted = 0, answered = 0;
    for (int round = 0; round < 200; ++round) {
        {
            fib::FiberManager manager;
            fib::Waiter waiter("uring");
            Pair pair = make_fds(true);
            char byte = 0;
            fib::Fiber reader([&] { fib::io::read(pair.first.get(), &byte, 1); });
            fib::Fiber writer([&] { fib::io::write_all(pair.second.get(), "x", 1); });
            reader.join();
            writer.join();
        }
        int blocking[2];
        ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, blocking), 0);
        const fib::UniqueFd mine(blocking[0]), theirs(blocking[1]);
        const timeval limit{10, 0};
        ::setsockopt(mine.get(), SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof limit);
        std::thread answer([&] {
            std::this_thread::sleep_for(std::chrono::milliseconds(1));  // let the recv block first
            if (::write(theirs.get(), "y", 1) != 1) ADD_FAILURE() << "write";
        });
        char byte = 0;
        const ssize_t n = ::recv(mine.get(), &byte, 1, 0);
        if (n < 0 && errno == EINTR) ++interrupted;
        if (n == 1) ++answered;
        answer.join();
    }
    EXPECT_EQ(interrupted, 0);
    EXPECT_EQ(answered, 200);
}

}  // namespace
