// waiter.hpp — lesson 4: the Waiter, a fiber that asks the kernel (poll(2)) which fds are ready.
//
//   fib::FiberManager manager;
//   fib::Waiter waiter;                         // starts the "waiter" fiber
//   // in any fiber:
//   short revents = waiter.wait(fd, POLLIN);    // sleeps until fd is readable
//
// A fiber that must wait for an fd registers it here and parks. The Waiter is
// itself a fiber in the ready queue: on its turn it calls poll() on every
// registered fd and wakes the fibers whose fd is ready.
//
//   client fibers        Waiter fiber                  kernel
//   wait(5, POLLIN) --+
//   wait(7, POLLOUT) -+-> pollfds [5 IN][7 OUT] --poll()--> which are ready?
//   (parked)     <-------- wake(fiber on 5) <------------- 5: POLLIN
//
// It never spins: when other fibers are ready it polls with timeout 0 and
// yields to them; when none is, it blocks in poll() with no timeout, so an idle
// server uses no CPU. With no fd to poll it parks; if then nothing else can
// run either, the manager reports a deadlock instead of hanging.
//
// One fiber per direction per fd: a second fiber waiting to read (or write) an
// fd that a fiber already waits to read (write) is a programming error and
// stops the program naming both. A reader and a writer on one fd are fine:
// they share the fd's one pollfd, so poll() never sees an fd twice.
#pragma once

#include <poll.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "fib/fiber.hpp"

namespace fib {

struct WaiterStats {
    std::uint64_t polls = 0;           // poll() calls
    std::uint64_t blocking_polls = 0;  // of those, with no timeout (nothing else was ready)
    std::uint64_t wakeups = 0;         // fibers woken because their fd was ready
    std::size_t waiting = 0;           // fibers waiting now
};

class Waiter {
public:
    // On the calling thread's FiberManager, which must exist; one per thread.
    Waiter();
    // Call from main: first waits for every fiber (as ~FiberManager does), then
    // ends the Waiter's own fiber.
    ~Waiter();
    Waiter(const Waiter&) = delete;
    Waiter& operator=(const Waiter&) = delete;

    // The Waiter of the calling thread, or nullptr.
    static Waiter* current() noexcept;

    // Blocks the running fiber until `fd` is ready for `events` (POLLIN,
    // POLLPRI, POLLRDHUP, POLLOUT). Returns poll's revents for it, which may
    // be or include POLLERR, POLLHUP or POLLNVAL: the caller decides.
    short wait(int fd, short events);

    WaiterStats stats() const;

private:
    // One waiting fiber; lives in wait()'s frame on that fiber's stack.
    struct Waiting {
        short events;
        short revents;
        FiberRecord* fiber;
    };
    // Who waits on one fd, and where its request sits in pollfds_ (-1: none).
    struct FdWaiters {
        Waiting* reader = nullptr;
        Waiting* writer = nullptr;
        int slot = -1;
    };

    void run();
    void wake_ready();
    void wake_if_ready(FdWaiters& fd, Waiting* waiting, short revents);
    FdWaiters& waiters_of(int fd);

    FiberManager& manager_;
    std::vector<FdWaiters> by_fd_;  // indexed by fd
    std::vector<pollfd> pollfds_;   // one per fd with a waiter, packed: poll()'s argument
    FiberRecord* self_ = nullptr;   // the Waiter's fiber, once it has run
    bool idle_ = false;             // parked with nothing to poll
    bool stopping_ = false;
    WaiterStats stats_;
    Fiber fiber_;  // last: it starts running only after the rest is built
};

}  // namespace fib
