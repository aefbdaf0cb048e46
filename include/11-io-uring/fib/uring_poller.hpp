// uring_poller.hpp — lesson 11: the Waiter on an io_uring: readiness for waits, completions for I/O.
//
// Lessons 4 and 5 ask the kernel which fds are *ready*, and then the fiber
// makes the call. An io_uring takes the whole call instead (read this fd into
// this buffer) and says when it is *done*. UringPoller does both, on one ring
// per thread:
// - as a Poller (poller.hpp), it serves Waiter::wait, wait_any and everything
//   built on them with one-shot IORING_OP_POLL_ADD requests;
// - as an I/O engine, it runs fib::io's read and connect, and the writes that
//   would block, as operations (io.cpp): the fiber fills an SQE, parks, and
//   the CQE wakes it with the call's result.
// The Waiter's loop calls wait() once per turn: one io_uring_enter hands the
// kernel every SQE the fibers filled since the last turn and waits for
// completions.
//
// The ownership protocol. An operation's buffer and its record (UringOp, in
// the frame of the fiber that started it) belong to the kernel from the
// moment the SQE is filled until its CQE has been read: the kernel writes the
// buffer and hands the record's address back in the CQE. So nothing may end
// an operation early. A cancel or a deadline only *asks* (IORING_OP_ASYNC_
// CANCEL) and then waits, shielded, for the original CQE, whatever it says;
// io::close cancels every operation on the fd and waits for all of them
// before the number is closed and can be reused; the destructor cancels and
// waits for everything before it gives the ring up. The fiber does not return,
// and its stack does not go back to the pool, before its CQE is in.
//
//   fiber                     UringPoller                 kernel
//   io::read(fd, buf) ---> SQE READ(fd, buf), park
//                          (next Waiter turn) enter ---> reads when data comes
//   cancel()  ---------->  SQE ASYNC_CANCEL(op), park shielded
//                          enter --------------------->  CQE(op): -ECANCELED or data
//   wakes, returns   <---  CQE(op) read: op done
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <vector>

#include "fib/fiber_record.hpp"
#include "fib/poller.hpp"
#include "fib/timer_heap.hpp"
#include "fib/uring.hpp"

namespace fib {

// One operation handed to the kernel, kept in the frame of the fiber that
// started it. Its address is the SQE's user_data, which the CQE brings back.
struct UringOp {
    int fd = -1;
    const char* what = "";  // "fib::io::read", for messages
    ParkToken token;        // the fiber's wait, which the CQE ends
    int result = 0;         // the CQE's res: a count, or -errno
    bool done = false;      // the CQE is in: the kernel has let go
    bool fd_closed = false; // io::close cancelled it (the caller says EBADF)
    int gave_up = 0;        // ECANCELED or ETIMEDOUT: a cancel was asked for
    std::uint32_t flags = 0;  // the CQE's flags: IORING_CQE_F_BUFFER says a provided buffer was used
    // A multishot operation (one SQE, a CQE per result) hands every CQE to
    // `on_cqe` instead of waking `token`: its owner queues the result and
    // wakes whom it serves. The operation is done at the first CQE without
    // IORING_CQE_F_MORE (done is set, and the record unlinked, before that call).
    void (*on_cqe)(UringOp& op, const io_uring_cqe& cqe) = nullptr;
    void* owner = nullptr;  // for on_cqe: the object the operation serves
    UringOp* next = nullptr;  // the operations on the same fd
    UringOp* prev = nullptr;
};

// How a UringPoller works: each rung of lesson 11's ablation table is one
// backend name (pollers.hpp).
struct UringOptions {
    const char* name;   // "uring", "uring-poll", ...
    bool operations;    // fib::io runs as operations; false: the ring only polls
    bool batching;      // SQEs wait for the Waiter's next enter; false: one enter each
    bool defer_taskrun; // IORING_SETUP_SINGLE_ISSUER | DEFER_TASKRUN (kernel 6.1)
    // Another thread's Event::set reaches this ring's Events as an
    // IORING_OP_MSG_RING message instead of an eventfd write (event.cpp).
    bool msg_ring = false;
};

class UringPoller final : public Poller {
public:
    // Sets the ring up; ok() false (and error() says why) if the kernel
    // refused. make_uring_poller (uring_probe.cpp) falls back to epoll then.
    // FIB_URING_ENTRIES sets the SQ size (default 256), for the tests.
    explicit UringPoller(const UringOptions& options);
    // Cancels every operation still in flight and removes every poll, and
    // waits for each CQE; then keeps the ring for this thread's next
    // UringPoller (see uring_poller.cpp for why it is not closed).
    ~UringPoller() override;

    bool ok() const { return ring_.ok(); }
    int error() const { return ring_.error(); }
    const Ring& ring() const { return ring_; }
    const UringOptions& options() const { return options_; }

    // The Poller: one-shot POLL_ADDs (uring_poller.cpp).
    const char* name() const override { return options_.name; }
    void watch(int fd, short events) override;
    void forget(int fd) override;  // also cancels and waits for the fd's operations
    void wait(int timeout_ms, std::vector<PollEvent>& ready) override;
    std::size_t in_flight() const override { return in_flight_; }
    UringPoller* uring() override { return options_.operations ? this : nullptr; }
    void describe_waits(std::FILE* out) const override;

    // The operations (uring_ops.cpp). prepare() takes an SQE for `op` (fd,
    // user_data and a new wait of the running fiber set, the rest zero) for
    // the caller to fill; complete() parks the fiber until op's CQE is in,
    // asking the kernel to cancel if the fiber is cancelled or `deadline`
    // (if any) passes first, and returns the CQE's res.
    io_uring_sqe& prepare(UringOp& op, std::uint8_t opcode);
    int complete(UringOp& op, const Clock::time_point* deadline);

    // Asks the kernel to give up `op` (an ASYNC_CANCEL SQE; its CQE still comes).
    void cancel(UringOp& op);
    // The same from an on_cqe hook, which runs inside reap(): only if an SQE
    // is free now. With the SQ full, taking one would enter and reap again,
    // inside this reap, and hand out the CQEs being read a second time; then
    // it takes none and returns false (the hook may try at its next CQE).
    bool try_cancel(UringOp& op);
    // Hands every filled SQE to the kernel now, without waiting.
    void submit();

    // Cross-thread wakes through the ring (the uring-msg rung; event.cpp).
    // On the owner's thread: where another thread's ring must send a message
    // about `fd` (an Event's eventfd): this ring's fd and the fd's generation,
    // as one word (ring fd + 1 | generation << 32), or 0 when this ring does
    // not take messages. The generation is new at every forget (a close), and
    // unique in the process, so a message about a closed fd, or one that
    // reached another ring with the same number, names no current wait.
    std::uint64_t message_target(int fd);
    // On the sender's thread: posts to the ring `target` names a CQE saying
    // "fd is readable" (POLLIN) for that generation of `fd`; true once the
    // kernel has delivered it, false if it could not (the caller then writes
    // the eventfd). Enters at once, and returns only when it knows.
    bool send_message(std::uint64_t target, int fd);
    // The MSG_RING rung without MSG_RING: the probe found none (uring_probe.cpp).
    void without_messages() { options_.msg_ring = false; }
    // Messages received that named a current generation, and those dropped
    // because theirs was a closed fd's (for the tests).
    std::uint64_t messages() const { return messages_; }
    std::uint64_t stale_messages() const { return stale_messages_; }

private:
    struct FdState {
        short armed = 0;          // events of the POLL_ADD in flight, 0: none
        std::uint32_t generation = 0;
        std::uint32_t life = 0;   // the messages' generation: new at each forget, 0 until asked for
        UringOp* operations = nullptr;  // in flight on this fd
    };
    FdState& state(int fd);
    io_uring_sqe& sqe();                 // the next SQE, making room if the SQ is full
    void remove_poll(int fd, FdState& state);
    void reap();                         // reads every CQE, and what overflowed
    void on_cqe(const io_uring_cqe& cqe);
    static bool is_message(std::uint64_t user_data);  // uring_msg.cpp
    void on_message(const io_uring_cqe& cqe);
    void drain_fd(int fd);               // enters until the fd has no operation in flight
    void check_owner() const;

    UringOptions options_;
    unsigned entries_, setup_flags_;     // what the ring was asked for
    std::unique_ptr<Ring> owned_ring_;   // a new ring, or one this thread kept (uring_poller.cpp)
    Ring& ring_;
    std::vector<FdState> fds_;           // indexed by fd
    std::vector<PollEvent> pending_;     // polls that fired, for the next wait()
    std::size_t in_flight_ = 0;
    bool reaping_ = false;               // inside reap(): send_message must not enter
    bool message_pending_ = false;       // send_message waits for its CQE
    int message_result_ = 0;             // that CQE's res: 0, or the MSG_RING's -errno
    std::uint64_t messages_ = 0, stale_messages_ = 0;
    std::uint64_t messages_received_ = 0;  // every message CQE, current or stale
    std::uint64_t messages_sent_ = 0;      // sends: two SQEs each (MSG_RING, NOP), one CQE
    unsigned forks_;                     // forks seen when it was made
};

// The Poller for a ring backend: probes io_uring; if it is not there (no
// kernel support, a seccomp filter, kernel.io_uring_disabled, a kernel
// without what this lesson uses), says so in one line on stderr, once per
// process, and returns an epoll Poller instead.
std::unique_ptr<Poller> make_uring_poller(const UringOptions& options);

}  // namespace fib
