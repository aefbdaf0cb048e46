// uring_ops.cpp — lesson 11: the ownership protocol: an operation ends only when its CQE is in.
#include <cerrno>

#include "fib/cancel.hpp"
#include "fib/fatal.hpp"
#include "fib/fiber_manager.hpp"
#include "fib/uring_poller.hpp"

namespace fib {

// The SQE for `op`: zeroed by the Ring, with the fd and the record's address
// (user_data), which the CQE will bring back. From here on `op` must stay
// where it is until complete() returns: the kernel holds its address. The
// record joins its fd's list, for io::close (forget) to find.
io_uring_sqe& UringPoller::prepare(UringOp& op, std::uint8_t opcode) {
    check_owner();
    FiberManager& manager = FiberManager::of_this_thread(op.what);
    op.token = manager.begin_wait();
    op.done = false;
    op.fd_closed = false;
    op.gave_up = 0;
    op.flags = 0;
    FdState& fd_state = state(op.fd);
    op.prev = nullptr;
    op.next = fd_state.operations;
    if (op.next) op.next->prev = &op;
    fd_state.operations = &op;
    ++in_flight_;
    io_uring_sqe& entry = sqe();
    entry.opcode = opcode;
    entry.fd = op.fd;
    entry.user_data = reinterpret_cast<std::uintptr_t>(&op);
    return entry;
}

void UringPoller::cancel(UringOp& op) {
    io_uring_sqe& entry = sqe();
    entry.opcode = IORING_OP_ASYNC_CANCEL;
    entry.addr = reinterpret_cast<std::uintptr_t>(&op);
    entry.user_data = 0;  // its own CQE says only whether it found op: not needed
}

bool UringPoller::try_cancel(UringOp& op) {
    io_uring_sqe* entry = ring_.next_sqe();
    if (!entry) return false;
    entry->opcode = IORING_OP_ASYNC_CANCEL;
    entry->addr = reinterpret_cast<std::uintptr_t>(&op);
    entry->user_data = 0;
    return true;
}

// Parks until op's CQE is in. Two things may end the wait first: a cancel of
// the fiber (cancel.hpp) and `deadline`. Neither can just return: the kernel
// may be writing into the caller's buffer right now, and the CQE will bring
// back the address of `op`, which lives in this frame. So each asks the
// kernel to cancel, and then waits for the original CQE, shielded from
// further cancels. That CQE says -ECANCELED, or the operation's own result if
// it finished first (a read that got data): the caller keeps that result,
// since the bytes were taken from the socket and are nowhere else.
int UringPoller::complete(UringOp& op, const Clock::time_point* deadline) {
    FiberManager& manager = *op.token.fiber->manager;
    if (!options_.batching) submit();
    Timer timer{deadline ? *deadline : Clock::time_point{}, op.token};
    if (deadline) TimerHeap::of_this_thread().add(timer);
    {
        const CancelScope cancellable(op.token);
        while (!op.done && !cancellable.woke_it() && !timer.expired)
            manager.park(op.token, WaitSite{op.what, nullptr, &op});
    }
    if (deadline && !timer.expired) TimerHeap::of_this_thread().cancel(timer);
    if (!op.done) {
        op.gave_up = timer.expired ? ETIMEDOUT : ECANCELED;
        cancel(op);
        if (!options_.batching) submit();
        const CancelShield shield;
        while (!op.done) manager.park(op.token, WaitSite{"io_uring: a cancelled operation's CQE", nullptr, &op});
    }
    return op.result;
}

}  // namespace fib
