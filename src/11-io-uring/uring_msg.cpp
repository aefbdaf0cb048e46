// uring_msg.cpp — lesson 11: a cross-thread wake as a ring-to-ring message (IORING_OP_MSG_RING), the uring-msg rung.
//
// IORING_OP_MSG_RING is an SQE on the sender's ring whose work is to post a
// CQE into another ring: sqe.fd names the target ring, sqe.len becomes the
// CQE's res and sqe.off its user_data. Event::set from another thread
// (event.cpp) uses it instead of an eventfd write: the owner's Waiter, asleep
// in io_uring_enter, finds the CQE in its own completion queue, with no
// POLL_ADD to fire and no eventfd counter to read back.
//
//   sender thread                              owner thread
//   signaled_ = true (release)
//   MSG_RING(owner ring, "fd, life") -+ link
//   NOP                           <---+        enter wakes: CQE "fd, life"
//   enter, waits for the one CQE of the two    life current and fd watched:
//     NOP's 0: delivered                         PollEvent{fd, POLLIN}
//     MSG_RING's -errno: failed:                 -> the Waiter wakes the Event's fiber
//     write the eventfd instead                  stale: dropped, counted
#include <poll.h>

#include <atomic>
#include <cerrno>
#include <cstring>

#include "fib/fatal.hpp"
#include "fib/uring_poller.hpp"

namespace fib {
namespace {

// A message's user_data: life << 32 | fd << 2 | 0b10 (a poll's ends in 1, a
// UringOp's address in 000). The end of a send, on the sender's own ring, is
// the constant 4, which no UringOp can have as its address.
constexpr std::uint64_t kMessageTag = 2;
constexpr std::uint64_t kMessageSent = 4;

std::uint64_t message_data(int fd, std::uint32_t life) {
    return std::uint64_t{life} << 32 | static_cast<std::uint64_t>(fd) << 2 | kMessageTag;
}

// Lives are handed out once in the whole process (0 is never one): a message
// about an fd since closed, or sent to a ring fd number that another thread's
// ring has taken since (the owner's thread ended), or that a previous Waiter
// of the same thread was asked for, finds no fd with that life, and is dropped.
std::atomic<std::uint32_t> next_life{1};

std::uint32_t new_life() {
    for (;;) {
        const std::uint32_t life = next_life.fetch_add(1, std::memory_order_relaxed);
        if (life != 0) return life;
    }
}

}  // namespace

bool UringPoller::is_message(std::uint64_t user_data) {
    return (user_data & 3) == kMessageTag || user_data == kMessageSent;
}

// The owner asks at Event::attach, on its own thread. The life is given out
// the first time and kept until forget() (the fd's close) clears it.
std::uint64_t UringPoller::message_target(int fd) {
    if (!options_.msg_ring || fd < 0) return 0;
    FdState& fd_state = state(fd);
    if (!fd_state.life) fd_state.life = new_life();
    return std::uint64_t{fd_state.life} << 32 | static_cast<std::uint32_t>(ring_.fd() + 1);
}

// The sender must know now whether the message went: its thread may block
// right after set() returns (a cluster thread parks in its Waiter's enter),
// and a failed message with no eventfd write behind it would be a lost wake.
// With IOSQE_CQE_SKIP_SUCCESS a delivered MSG_RING posts nothing to the
// sender, so the send is linked (IOSQE_IO_LINK) to a NOP. Exactly one of the
// two posts a CQE, both with user_data kMessageSent: the NOP's res 0 when
// the message was delivered; or, when the MSG_RING failed, its own CQE with
// -errno, and then the kernel skips the CQEs of the rest of the link too
// (a failed SKIP_SUCCESS request sets REQ_F_SKIP_LINK_CQES: waiting for the
// NOP's -ECANCELED would wait for ever, as the fallback test showed). One
// enter submits both and waits for a completion; it loops, reaping, until
// that CQE is in. Both SQEs must go in one enter (a link cut at the end of a
// submission would let the NOP succeed alone), so SQEs the fibers filled
// before are submitted first if the SQ has no room for two. Not from inside
// reap() (an on_cqe hook): entering there hands out the CQEs being read
// twice; then it reports failure and the caller writes the eventfd.
bool UringPoller::send_message(std::uint64_t target, int fd) {
    if (reaping_) return false;
    check_owner();
    const int ring_fd = static_cast<int>(static_cast<std::uint32_t>(target)) - 1;
    const std::uint32_t life = static_cast<std::uint32_t>(target >> 32);
    if (ring_.free_sqes() < 2) submit();
    io_uring_sqe* message = ring_.next_sqe();
    io_uring_sqe* sent = message ? ring_.next_sqe() : nullptr;
    if (!sent) fatal("io_uring: no room for a message after a submit");
    message->opcode = IORING_OP_MSG_RING;
    message->fd = ring_fd;
    message->addr = IORING_MSG_DATA;
    message->len = POLLIN;  // the owner's CQE res: what a fired POLL_ADD would say
    message->off = message_data(fd, life);
    message->flags = IOSQE_CQE_SKIP_SUCCESS | IOSQE_IO_LINK;
    message->user_data = kMessageSent;  // posted only if it fails
    sent->opcode = IORING_OP_NOP;
    sent->user_data = kMessageSent;
    message_pending_ = true;
    message_result_ = -ECANCELED;
    while (message_pending_) {
        const int result = ring_.enter(true, -1);
        if (result < 0 && result != -ETIME && result != -EINTR && result != -EBUSY && result != -EAGAIN) {
            message_pending_ = false;  // the NOP's CQE, if it ever comes, is ignored
            return false;
        }
        reap();
    }
    return message_result_ == 0;
}

// On the owner's ring: a message whose life is the fd's current one turns
// into readiness for the Waiter, as a fired poll would, but only while the
// Waiter watches the fd (a POLL_ADD is armed): otherwise no fiber waits, and
// the Event's flag, already set, is what the next try_wait finds. The poll
// stays armed: the Waiter's next watch() for the fd takes it back. On the
// sender's ring: the NOP that ends a send (above).
void UringPoller::on_message(const io_uring_cqe& cqe) {
    if (cqe.user_data == kMessageSent) {
        ++messages_sent_;  // two SQEs, this one CQE
        if (message_pending_) message_result_ = cqe.res;
        message_pending_ = false;
        return;
    }
    ++messages_received_;
    const int fd = static_cast<int>((cqe.user_data & 0xffffffff) >> 2);
    const auto life = static_cast<std::uint32_t>(cqe.user_data >> 32);
    if (static_cast<std::size_t>(fd) >= fds_.size() || fds_[static_cast<std::size_t>(fd)].life != life) {
        ++stale_messages_;
        return;
    }
    ++messages_;
    if (!fds_[static_cast<std::size_t>(fd)].armed) return;
    pending_.push_back(PollEvent{fd, static_cast<short>(cqe.res)});
}

}  // namespace fib
