// waiter.hpp — lesson 11: lesson 10's Waiter, whose Poller may run I/O of its own (an io_uring).
//
// Replaces lesson 10's waiter.hpp from stage 11 on, adding poller() for
// fib::io to reach the thread's UringPoller (uring_poller.hpp), and saying
// that the Waiter's fiber also runs while the Poller has operations in flight
// (Poller::in_flight): they are waits too, of fibers parked for a CQE.
// Lesson 10's said:
//
// Replaces lesson 6's waiter.hpp from stage 10 on, adding two fields to
// Waiting: `on_ready` and `context`. A registration with an on_ready is not a
// parked fiber's: when its fd is ready, the Waiter calls on_ready (on its own
// fiber) and wakes nobody. Lesson 10's awaitables (awaitables.hpp) register
// that way for a suspended coroutine: on_ready hands the coroutine's handle to
// its Executor's ready queue, and the Executor's fiber resumes it. Everything
// else is lesson 6's Waiter, unchanged:
//
// Replaces lesson 4's waiter.hpp from stage 6 on. What it adds:
// - the thread's TimerHeap (timer_heap.hpp): with nothing else to run, the
//   Waiter blocks in the kernel until the nearest deadline, then wakes the
//   fibers whose deadline has passed, and its fiber keeps running while any
//   deadline is set;
// - watch() and unwatch(), public: a fiber may register several waits (and a
//   deadline), park once, and drop what did not fire (wait_any.hpp). The
//   Waiter and the timers wake a fiber only while it is still blocked, so the
//   first to fire wins.
//
//   fib::FiberManager manager;
//   fib::Waiter waiter;                         // this thread's Waiter
//   // in any fiber:
//   short revents = waiter.wait(fd, POLLIN);    // sleeps until fd is readable
//
// A fiber that must wait for an fd registers it here and parks. The Waiter's
// own fiber sits in the ready queue like any other: on its turn it asks the
// kernel, through its Poller (poll(2), see poller.hpp), which registered fds
// are ready, and wakes the fibers waiting on them.
//
//   client fibers        Waiter fiber                  kernel
//   wait(5, POLLIN) --+
//   wait(7, POLLOUT) -+-> fd 5: IN, fd 7: OUT --poll()--> which are ready?
//   (parked)     <-------- wake(fiber on 5) <------------- 5: POLLIN
//
// It never spins: when other fibers are ready it polls with timeout 0 and
// yields to them; when none is, it blocks in poll() with no timeout, so an idle
// server uses no CPU. When no fiber waits for any fd, the Waiter's fiber ends;
// the next wait() starts it again. So a thread whose fibers all wait on each
// other, and on no fd, still gets lesson 2's deadlock report instead of a
// hang, and FiberManager::wait_for_all() returns once every other fiber is done.
//
// One fiber per direction per fd: a second fiber waiting to read (or write) an
// fd that a fiber already waits to read (write) is a programming error and
// stops the program naming both. A reader and a writer on one fd are fine:
// the Poller is asked for the union of their events, once per fd.
#pragma once

#include <poll.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "fib/fiber.hpp"
#include "fib/poller.hpp"
#include "fib/timer_heap.hpp"

namespace fib {

struct WaiterStats {
    std::uint64_t polls = 0;           // calls to the Poller's wait
    std::uint64_t blocking_polls = 0;  // of those, with no timeout (nothing else was ready)
    std::uint64_t wakeups = 0;         // fibers woken because their fd was ready
    std::uint64_t fibers_started = 0;  // times the Waiter's fiber was started
    std::size_t waiting = 0;           // waits registered now
};

class Waiter {
public:
    // On the calling thread's FiberManager, which must exist; one per thread.
    // `backend` names the Poller (see make_poller); nullptr: the default.
    explicit Waiter(const char* backend = nullptr);
    // Call from main: first waits for every fiber that something in the program
    // can still wake (as ~FiberManager does); the Waiter's own fiber ends once no
    // fiber waits for an fd. If what is left are fibers waiting on fds, which
    // only the kernel could ever wake, it stops the program naming each: a
    // program that means to wait for them says so, calling wait_for_all()
    // before the Waiter goes.
    ~Waiter();
    Waiter(const Waiter&) = delete;
    Waiter& operator=(const Waiter&) = delete;

    // The Waiter of the calling thread, or nullptr.
    static Waiter* current() noexcept;
    // The Waiter of the calling thread; with none, stops the program with "`what`
    // on a thread with no Waiter; create a fib::Waiter after the FiberManager".
    static Waiter& of_this_thread(const char* what);

    // Blocks the running fiber until `fd` is ready for `events` (POLLIN,
    // POLLPRI, POLLRDHUP, POLLOUT). Returns poll's revents for it, which may
    // be or include POLLERR, POLLHUP or POLLNVAL: the caller decides. Returns
    // 0 if the fiber is cancelled (cancel.hpp), at once if it already was.
    short wait(int fd, short events);

    // `fd` is about to be closed (io::close and UniqueFd call this): a fiber
    // still waiting on it wakes with POLLNVAL, and the Poller forgets it.
    void forget(int fd);

    const Poller& poller() const { return *poller_; }
    Poller& poller() { return *poller_; }
    // An operation was handed to the Poller (uring_io.cpp), and its CQE is
    // in: it counts as a wait (stats().waiting), and the Waiter's fiber must
    // run to read its completion, as for a registered one.
    void operation_started() {
        ++stats_.waiting;
        start_if_stopped();
    }
    void operation_ended() {
        --stats_.waiting;
        ++stats_.wakeups;
    }
    WaiterStats stats() const { return stats_; }

    // This thread's timers, waited on by the Waiter's loop.
    TimerHeap& timers() { return timers_; }

private:
    void run();  // the Waiter's fiber
    void start_if_stopped();
    [[noreturn]] void report_stuck_waits();
    bool has_work() const;
    int blocking_timeout();

public:
    // One fiber's wait for one fd, kept in the waiting fiber's frame.
    struct Waiting {
        int fd;
        short events;
        short revents = 0;  // what woke it; 0 while registered
        ParkToken token;  // the waiting fiber's wait; with on_ready, the fiber that registered
        // With on_ready: called when the fd is ready (revents set, the
        // registration gone), instead of waking a fiber. `context` is for it.
        void (*on_ready)(Waiting& waiting) = nullptr;
        void* context = nullptr;
    };
    // wait() is watch(), park, and reading revents. watch() registers a wait;
    // when its fd is ready the Waiter sets revents, drops the registration and
    // wakes the fiber, unless something else woke it first (one of its other
    // waits, or its deadline): then it only sets revents. unwatch() drops a
    // registration that did not fire; call it before the Waiting goes away.
    void watch(Waiting& waiting);
    void unwatch(Waiting& waiting);

private:
    friend class TimerHeap;  // a new deadline starts the Waiter's fiber

    // Who waits on one fd: at most one reader and one writer.
    struct FdWaiters {
        Waiting* reader = nullptr;
        Waiting* writer = nullptr;
        short events() const {
            return static_cast<short>((reader ? reader->events : 0) | (writer ? writer->events : 0));
        }
    };
    void wake_ready();
    void wake_if_ready(FdWaiters& fd, Waiting* waiting, short revents);
    FdWaiters& waiters_of(int fd);

    FiberManager& manager_;
    std::unique_ptr<Poller> poller_;
    std::vector<FdWaiters> by_fd_;  // indexed by fd
    std::vector<PollEvent> ready_;  // filled by each Poller wait
    bool started_ = false;          // the Waiter's fiber is queued or running
    bool closing_ = false;          // ~Waiter is waiting for the other fibers
    FiberRecord* self_ = nullptr;   // the Waiter's fiber, while it runs
    WaiterStats stats_;
    TimerHeap timers_{*this};
};

}  // namespace fib
