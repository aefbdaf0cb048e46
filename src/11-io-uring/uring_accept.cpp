// uring_accept.cpp — lesson 11: Acceptor: a multishot accept, its bounded queue, and its re-arming.
#include "fib/uring_accept.hpp"

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

#include "fib/cancel.hpp"
#include "fib/fatal.hpp"
#include "fib/fiber_manager.hpp"
#include "fib/uring_io.hpp"
#include "fib/waiter.hpp"

namespace fib::io::ring {
namespace {

// The multishot needs the ring to run operations, not only polls: with
// epoll, poll(2) or the uring-poll rung there is nothing to hand it to.
UringPoller& ring_or_stop() {
    UringPoller* ring = of_this_thread();
    if (!ring) {
        const Waiter* waiter = Waiter::current();
        fatal("a fib::io::ring::Acceptor was created on a thread whose Waiter %s%s; it needs one that runs "
              "fib::io on an io_uring (FIB_BACKEND=uring)",
              waiter ? "uses " : "is missing", waiter ? waiter->poller().name() : "");
    }
    return *ring;
}

}  // namespace

Acceptor::Acceptor(int listening_socket, std::size_t queue_bound)
    : manager_(FiberManager::of_this_thread("a fib::io::ring::Acceptor was created")),
      ring_(ring_or_stop()),
      waiter_(*Waiter::current()),
      listener_(listening_socket),
      bound_(queue_bound ? queue_bound : 1),
      fds_(bound_) {
    op_.fd = listener_;
    op_.what = "fib::io::ring::Acceptor (multishot accept)";
    op_.on_cqe = &Acceptor::on_cqe;
    op_.owner = this;
    arm();
}

// The destructor must not return while the kernel holds op_: it asks for a
// cancel (unless the bound already did) and waits for the last CQE, shielded
// as UringPoller::complete waits, since a cancel of this fiber cannot make
// the kernel let go sooner. Then the fds nobody took are closed: they were
// never handed out, so no Waiter or ring knows them.
Acceptor::~Acceptor() {
    if (FiberManager::current() != &manager_)
        fatal("a fib::io::ring::Acceptor was destroyed on another thread than its own");
    if (FiberManager::parked(waiting_))
        fatal("a fib::io::ring::Acceptor was destroyed while %s waited in its accept()",
              label(*waiting_.fiber).text);
    if (armed_) {
        if (!cancel_asked_) ring_.cancel(op_);
        cancel_asked_ = true;
        if (!ring_.options().batching) ring_.submit();
        const CancelShield shield;
        while (armed_) {
            waiting_ = manager_.begin_wait();
            manager_.park(waiting_, WaitSite{"fib::io::ring::Acceptor: the multishot's last CQE", nullptr, this});
        }
        waiting_ = {};
    }
    while (count_ > 0) ::close(pop());
}

// One SQE that the kernel keeps: IORING_ACCEPT_MULTISHOT goes in ioprio, the
// flags for the new fds in accept_flags, and no address is asked for. The
// kernel reads RLIMIT_NOFILE here, at prep time (io_accept_prep): this arming
// keeps that limit until its last CQE, whatever setrlimit says meanwhile. So
// a limit lowered later is not enforced by this arming, and one raised after
// an EMFILE helps only once accept() has reported it and armed again.
void Acceptor::arm() {
    io_uring_sqe& sqe = ring_.prepare(op_, IORING_OP_ACCEPT);
    sqe.ioprio |= IORING_ACCEPT_MULTISHOT;
    sqe.accept_flags = SOCK_NONBLOCK | SOCK_CLOEXEC;
    armed_ = true;
    cancel_asked_ = false;
    waiter_.operation_started();
    if (!ring_.options().batching) ring_.submit();
}

// Called inside UringPoller::reap, on whatever fiber reaps (the Waiter's,
// usually), for each CQE of op_. It only records and wakes: a new SQE here
// could re-enter reap (see try_cancel), and the arming is accept()'s job.
void Acceptor::on_cqe(UringOp& op, const io_uring_cqe& cqe) {
    Acceptor& self = *static_cast<Acceptor*>(op.owner);
    if (cqe.res >= 0) self.push(cqe.res);
    if (!(cqe.flags & IORING_CQE_F_MORE)) {
        // The last CQE: op_ is done and unlinked. -ECANCELED is our own
        // cancel (the bound, the destructor), or io::close's (fd_closed):
        // not an error to report. Anything else ended the multishot.
        self.armed_ = false;
        self.cancel_asked_ = false;
        self.waiter_.operation_ended();
        if (op.fd_closed) self.listener_closed_ = true;
        else if (cqe.res < 0 && cqe.res != -ECANCELED) self.error_ = -cqe.res;
    } else if (self.count_ >= self.bound_ && !self.cancel_asked_) {
        // Full: stop accepting, and let the backlog hold the rest. With the
        // SQ full, try_cancel takes no SQE; the next CQE tries again.
        self.cancel_asked_ = self.ring_.try_cancel(op);
    }
    self.manager_.wake(self.waiting_);
}

// Queued fds first, in the order the kernel accepted them; then the error
// that came after them, once; then a wait. Taking an fd makes room, so a
// multishot the bound stopped is armed again here. An ASYNC_CANCEL for op_
// may still sit in the SQ when its last CQE came for another reason: arming
// op_ again is safe even then, because the kernel takes SQEs in order, and
// that cancel is looked up before the new ACCEPT is issued.
int Acceptor::accept() {
    if (FiberManager::current() != &manager_)
        fatal("fib::io::ring::Acceptor::accept() was called on another thread than the Acceptor's");
    if (FiberManager::parked(waiting_))
        fatal("%s called fib::io::ring::Acceptor::accept() on fd %d, where %s already waits; one fiber at a "
              "time may", label(*manager_.running()).text, listener_, label(*waiting_.fiber).text);
    for (;;) {
        if (count_ > 0) {
            const int fd = pop();
            if (!armed_ && !listener_closed_ && error_ == 0 && count_ < bound_) arm();
            return fd;
        }
        if (listener_closed_) {
            errno = EBADF;
            return -1;
        }
        if (error_ != 0) {
            errno = error_;
            error_ = 0;
            return -1;
        }
        if (!armed_) arm();
        // Cancelled: this fiber stops waiting; the multishot goes on, and
        // what it accepts waits in the queue for the next accept().
        if (this_fiber::cancelled()) {
            errno = ECANCELED;
            return -1;
        }
        const ParkToken me = manager_.begin_wait();
        waiting_ = me;
        bool cancelled = false;
        {
            const CancelScope cancellable(me);
            if (count_ == 0 && error_ == 0 && !listener_closed_)
                manager_.park(me, WaitSite{"fib::io::ring::Acceptor::accept", nullptr, this});
            cancelled = cancellable.woke_it();
        }
        // Woken, this fiber waits no more; but between its wake and its run
        // another fiber may have called accept() and be the one parked now.
        if (waiting_.fiber == me.fiber && waiting_.wait == me.wait) waiting_ = {};
        if (cancelled) {
            errno = ECANCELED;
            return -1;
        }
    }
}

// The queue grows past bound_ only when a burst overshoots it (the header
// says why); otherwise it never allocates after the constructor.
void Acceptor::push(int fd) {
    if (count_ == fds_.size()) {
        std::vector<int> wider(fds_.size() * 2);
        for (std::size_t i = 0; i < count_; ++i) wider[i] = fds_[(head_ + i) % fds_.size()];
        fds_.swap(wider);
        head_ = 0;
    }
    fds_[(head_ + count_) % fds_.size()] = fd;
    ++count_;
}

int Acceptor::pop() {
    const int fd = fds_[head_];
    head_ = (head_ + 1) % fds_.size();
    --count_;
    return fd;
}

}  // namespace fib::io::ring
