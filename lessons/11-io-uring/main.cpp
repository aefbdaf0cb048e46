// main.cpp — lesson 11 demo: fib::io on an io_uring, and an operation that ends only when its CQE is in.
//
// Part 1 reads a pipe line by line: each read is one SQE and one CQE, and
// the Waiter's one io_uring_enter per turn carries them. Part 2 cancels a
// fiber whose read the kernel holds: the fiber asks the kernel to cancel and
// waits for the read's own CQE before it returns. Part 3 closes an fd under a
// blocked read and gives its number to a new socket at once: the read ends
// with EBADF and never sees the new socket's bytes. Run it with
// FIB_BACKEND=epoll, or under scripts/without-io-uring.py, to see the same
// program on the fallback.
#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "fib/cancel.hpp"
#include "fib/condvar.hpp"
#include "fib/fiber.hpp"
#include "fib/io.hpp"
#include "fib/uring_poller.hpp"
#include "fib/waiter.hpp"

namespace {

void print_ring(const fib::Waiter& waiter, const char* when) {
    const auto* uring = dynamic_cast<const fib::UringPoller*>(&waiter.poller());
    if (!uring) return;
    const fib::RingStats stats = uring->ring().stats();
    std::printf("  ring %s: %llu io_uring_enter calls, %llu SQEs, %llu CQEs\n", when,
                static_cast<unsigned long long>(stats.enters), static_cast<unsigned long long>(stats.submitted),
                static_cast<unsigned long long>(stats.completed));
}

void part1_read_and_write(fib::Waiter& waiter) {
    std::printf("Part 1: a reader's READ waits in the kernel; each line written completes one\n");
    int pipe_fds[2];
    if (::pipe2(pipe_fds, O_NONBLOCK | O_CLOEXEC) < 0) return;
    int lines_read = 0;
    fib::CondVar got_one;
    fib::Fiber reader({.name = "reader"}, [&] {
        char buffer[64];
        for (int line = 0; line < 3; ++line) {
            const ssize_t n = fib::io::read(pipe_fds[0], buffer, sizeof buffer);
            if (n <= 0) return;
            std::printf("  reader: %zd bytes: %.*s", n, static_cast<int>(n), buffer);
            ++lines_read;
            got_one.notify_all();
        }
    });
    fib::Fiber writer({.name = "writer"}, [&] {
        const char* lines[] = {"one\n", "two\n", "three\n"};
        for (int line = 0; line < 3; ++line) {
            fib::io::write_all(pipe_fds[1], lines[line], std::strlen(lines[line]));
            while (lines_read <= line) got_one.wait();  // the reader parks again before the next
        }
    });
    reader.join();
    writer.join();
    fib::io::close(pipe_fds[0]);
    fib::io::close(pipe_fds[1]);
    print_ring(waiter, "after part 1");
}

void part2_cancel_waits_for_the_cqe() {
    std::printf("Part 2: cancel a fiber whose read the kernel holds\n");
    int pair[2];
    ::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, pair);
    fib::Fiber reader({.name = "blocked-reader"}, [&] {
        char buffer[64];
        const ssize_t n = fib::io::read(pair[0], buffer, sizeof buffer);
        std::printf("  blocked-reader: read returned %zd (%s), after its CQE came back\n", n,
                    n < 0 ? std::strerror(errno) : "data");
    });
    fib::this_fiber::yield();  // the reader submits its read and parks
    std::printf("  main: cancel blocked-reader\n");
    reader.cancel();
    reader.join();
    fib::io::close(pair[0]);
    fib::io::close(pair[1]);
}

void part3_close_and_reuse() {
    std::printf("Part 3: close an fd under a blocked read, and reuse its number at once\n");
    int pair[2];
    ::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, pair);
    const int victim = pair[0];
    fib::Fiber reader({.name = "reader"}, [&] {
        char buffer[64] = {};
        const ssize_t n = fib::io::read(victim, buffer, sizeof buffer);
        if (n < 0) std::printf("  reader: read of fd %d returned -1 (%s)\n", victim, std::strerror(errno));
        else std::printf("  reader: read of fd %d returned %zd bytes: %.*s\n", victim, n, static_cast<int>(n), buffer);
    });
    fib::this_fiber::yield();
    fib::io::close(victim);  // cancels the read and waits for its CQE first
    int intruder[2];
    ::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, intruder);
    std::printf("  main: closed fd %d; the next socket got fd %d; it says \"intruder\"\n", victim, intruder[0]);
    [[maybe_unused]] ssize_t sent = ::write(intruder[1], "intruder", 8);
    reader.join();
    ::close(intruder[0]);
    ::close(intruder[1]);
    fib::io::close(pair[1]);
}

}  // namespace

int main() {
    fib::FiberManager manager;
    fib::Waiter waiter;  // the ring, stage 11's default (FIB_BACKEND names another)
    std::printf("Waiter backend: %s\n", waiter.poller().name());
    part1_read_and_write(waiter);
    part2_cancel_waits_for_the_cqe();
    part3_close_and_reuse();
    print_ring(waiter, "at the end");
    return 0;
}
