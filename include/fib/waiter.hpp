// waiter.hpp — lesson 4: the Waiter, a fiber that asks the kernel which fds are ready.
//
//   fib::FiberManager manager;
//   fib::Waiter waiter;                         // starts the "waiter" fiber
//   // in any fiber:
//   short revents = waiter.wait(fd, POLLIN);    // sleeps until fd is readable
//
// A fiber that must wait for an fd registers it here and parks. The Waiter is
// itself a fiber in the ready queue: on its turn it asks the kernel, through
// its Poller (poll(2) in lesson 4, see poller.hpp), which registered fds are
// ready, and wakes the fibers waiting on them.
//
//   client fibers        Waiter fiber                  kernel
//   wait(5, POLLIN) --+
//   wait(7, POLLOUT) -+-> fd 5: IN, fd 7: OUT --poll()--> which are ready?
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
// the Poller is asked for the union of their events, once per fd.
//
// Two extension points serve lesson 5, which waits with timeouts and on
// several fds at once: wait() is made of watch(), park and unwatch(), public
// for such waits to use; and a WaiterClock (lesson 5's timers) may tell the
// loop how long it may block and wake fibers whose deadline has passed.
#pragma once

#include <poll.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "fib/fiber.hpp"
#include "fib/poller.hpp"

namespace fib {

struct WaiterStats {
    std::uint64_t polls = 0;             // calls to the Poller's wait (poll(2) in lesson 4)
    std::uint64_t blocking_polls = 0;    // of those, with no timeout (nothing else was ready)
    std::uint64_t wakeups = 0;           // fibers woken because their fd was ready
    std::uint64_t interest_changes = 0;  // epoll_ctl calls (lesson 5); 0 with poll
    std::size_t waiting = 0;             // waits registered now (one per waiting fiber in lesson 4)
};

// Lesson 5's timers plug into the Waiter's loop through this interface. With
// no clock (all of lesson 4) the Waiter blocks with no timeout.
class WaiterClock {
public:
    virtual ~WaiterClock() = default;
    virtual bool pending() const = 0;  // a deadline is set: do not park idle
    virtual int timeout_ms() = 0;      // until the nearest deadline, rounded up; -1: none
    virtual void expire() = 0;         // wakes the fibers whose deadline has passed
};

class Waiter {
public:
    // On the calling thread's FiberManager, which must exist; one per thread.
    // `backend` names the Poller (see make_poller); nullptr: the default.
    explicit Waiter(const char* backend = nullptr);
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

    // `fd` is about to be closed (io::close and UniqueFd call this): a fiber
    // still waiting on it wakes with POLLNVAL, and the Poller forgets it.
    void forget(int fd);

    // One fiber's wait for one fd, kept in the waiting fiber's frame.
    struct Waiting {
        int fd;
        short events;
        short revents = 0;  // what woke it; 0 while registered
        FiberRecord* fiber;
    };
    // wait() is watch(), park, and reading revents. watch() registers a wait;
    // when its fd is ready the Waiter sets revents, drops the registration and
    // wakes the fiber, unless something else woke it first (lesson 5 waits on
    // several fds and a timer: the first to fire wins). unwatch() drops a
    // registration that did not fire; call it before the Waiting goes away.
    void watch(Waiting& waiting);
    void unwatch(Waiting& waiting);

    // The clock (lesson 5's timers), created on first use; see WaiterClock.
    WaiterClock* clock() const { return clock_.get(); }
    void set_clock(std::unique_ptr<WaiterClock> clock) { clock_ = std::move(clock); }
    // The Waiter parks when it has nothing to wait for; a new deadline wakes it.
    void wake_if_idle();

    const char* backend() const { return poller_->name(); }
    WaiterStats stats() const;

private:
    // Who waits on one fd: at most one reader and one writer.
    struct FdWaiters {
        Waiting* reader = nullptr;
        Waiting* writer = nullptr;
        short events() const {
            return static_cast<short>((reader ? reader->events : 0) | (writer ? writer->events : 0));
        }
    };

    void run();
    bool has_work() const;
    int blocking_timeout();
    void wake_ready();
    void wake_if_ready(FdWaiters& fd, Waiting* waiting, short revents);
    FdWaiters& waiters_of(int fd);

    FiberManager& manager_;
    std::unique_ptr<Poller> poller_;
    std::unique_ptr<WaiterClock> clock_;  // none until lesson 5's first timer
    std::vector<FdWaiters> by_fd_;       // indexed by fd
    std::vector<PollEvent> ready_;       // filled by each Poller wait
    FiberRecord* self_ = nullptr;        // the Waiter's fiber, once it has run
    bool idle_ = false;                  // parked with nothing to poll
    bool stopping_ = false;
    WaiterStats stats_;
    Fiber fiber_;  // last: it starts running only after the rest is built
};

}  // namespace fib
