// uring_accept.hpp — lesson 11: Acceptor, one multishot IORING_OP_ACCEPT that keeps accepting for a server.
//
// fib::io::accept (io.cpp) waits for readiness and calls accept4 for each
// connection: a wake, a system call, and a new wait per client. An Acceptor
// hands the kernel one SQE (IORING_OP_ACCEPT with IORING_ACCEPT_MULTISHOT)
// that stays armed: the kernel accepts every connection as it comes and
// posts a CQE for each, carrying the new fd, whether or not a fiber waits.
// The fds wait in the Acceptor's queue until accept() takes them.
//
//   kernel                         Acceptor (on_cqe, in the Waiter's turn)     fiber
//   connection -> CQE(fd 7, MORE)  queue: 7      --------------------------->  accept(): 7
//   connection -> CQE(fd 8, MORE)  queue: 8, ... up to the bound: cancel
//   CQE(-ECANCELED), no MORE       not armed; the backlog holds the rest
//                                  accept() takes one: arm again        <----  accept(): 8
//
// The queue is bounded, because a server that stops taking connections must
// stop taking them from the kernel too: when `queue_bound` fds are queued the
// Acceptor cancels the multishot, and the listening socket's backlog holds
// the rest (as for any server that stops calling accept); accept() arms it
// again when it takes an fd. The bound stops the asking; it cannot cut a
// burst short. The kernel's multishot accepts every connection waiting in
// the backlog in one go, so connections that came before the cancel landed,
// or a backlog deeper than the room left when accept() arms it again, may
// leave more than the bound queued (L11_Accept.AFullQueue... sees 12 come at
// once). Those fds are kept, never closed (the clients think they are
// connected), and no more are accepted until the queue is below the bound.
//
// Errors. A CQE without IORING_CQE_F_MORE ends the multishot. If it carries
// an error (EMFILE, ENFILE, ENOMEM...), accept() reports it once, after the
// fds queued before it, and the next accept() arms again. Mind that the
// kernel reads RLIMIT_NOFILE when the SQE is prepared: an armed Acceptor
// keeps the limit it saw (a limit lowered later is not seen; one raised after
// an EMFILE is seen from the next arming on).
//
// Lifetime rules:
// - Only on a thread whose Waiter runs fib::io on an io_uring
//   (io::ring::of_this_thread(), FIB_BACKEND=uring): elsewhere, a fatal
//   error says so.
// - Used and destroyed on its own thread, and destroyed before that
//   thread's Waiter (while armed, the ring holds an operation, which keeps
//   the Waiter's fiber running): destroy it before main waits for all.
// - The destructor cancels the multishot and waits, shielded from cancels,
//   for its last CQE (the ownership protocol of uring_poller.hpp: the kernel
//   holds the record until then), then closes every fd still queued. No
//   fiber may be waiting in accept() then.
// - One fiber at a time may wait in accept(); a second is a fatal error
//   naming both. A cancel of the waiting fiber (cancel.hpp) ends its wait
//   with ECANCELED but leaves the multishot armed, serving the queue.
// - io::close of the listening socket ends the multishot (UringPoller::forget
//   cancels and drains it); from then on accept() fails with EBADF.
#pragma once

#include <cstddef>
#include <vector>

#include "fib/fiber_record.hpp"
#include "fib/uring_poller.hpp"

namespace fib {
class FiberManager;
class Waiter;
}  // namespace fib

namespace fib::io::ring {

class Acceptor {
public:
    // Arms a multishot accept on `listening_socket` (listening already, on
    // this thread's ring). The fds it yields are SOCK_NONBLOCK | SOCK_CLOEXEC.
    // A `queue_bound` of 0 counts as 1.
    explicit Acceptor(int listening_socket, std::size_t queue_bound = 64);
    ~Acceptor();
    Acceptor(const Acceptor&) = delete;
    Acceptor& operator=(const Acceptor&) = delete;

    // A new connection's fd, which the caller owns, parking until one comes.
    // -1 with errno: ECANCELED (the fiber was cancelled: the Acceptor goes
    // on), EBADF (the listening socket was closed), or the error that ended
    // the multishot (EMFILE...), once; the next call arms it again.
    int accept();

    // For tests: the fds waiting in the queue; whether the multishot is armed.
    std::size_t queued() const { return count_; }
    bool armed() const { return armed_; }

private:
    static void on_cqe(UringOp& op, const io_uring_cqe& cqe);
    void arm();
    void push(int fd);
    int pop();

    FiberManager& manager_;
    UringPoller& ring_;  // checked before waiter_ is bound: ring_or_stop() says what is missing
    Waiter& waiter_;
    const int listener_;
    const std::size_t bound_;
    // The multishot's record: the kernel's from arm() to its last CQE.
    UringOp op_;
    bool armed_ = false;            // op_ is with the kernel
    bool cancel_asked_ = false;     // an ASYNC_CANCEL for op_ is on its way
    bool listener_closed_ = false;  // io::close cancelled it: EBADF for good
    int error_ = 0;                 // the error that ended it, for accept() to report once
    ParkToken waiting_;             // the fiber parked in accept() (or the destructor)
    // The queue, a circular buffer: bound_ slots, grown only when a burst
    // overshoots the bound (see above).
    std::vector<int> fds_;
    std::size_t head_ = 0, count_ = 0;
};

}  // namespace fib::io::ring
