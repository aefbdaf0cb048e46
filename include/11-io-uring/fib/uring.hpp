// uring.hpp — lesson 11: an io_uring by hand: io_uring_setup, three mmaps, io_uring_enter.
//
// No liburing: the course uses the standard library and the kernel's own
// header (linux/io_uring.h), which only declares the structures. A Ring is
// two queues the process shares with the kernel:
//
//   submission queue (SQ)                      completion queue (CQ)
//   we write SQEs, then move the tail  ---->   the kernel writes CQEs, then moves the tail
//   the kernel reads them, moves the head      we read them, then move the head
//
//   sqes[]:  the submission entries themselves (an array we fill)
//   sq ring: head, tail, mask, flags, and array[] (which sqe each slot means)
//   cq ring: head, tail, mask, overflow, and cqes[] (the completions)
//
// Each index has one writer: we write the SQ tail and the CQ head, the kernel
// writes the SQ head and the CQ tail. Whoever moves an index publishes what it
// wrote before (release), and whoever reads the other side's index must see
// what was written before it moved (acquire). See uring.cpp.
//
// One Ring per thread, used only by that thread (SINGLE_ISSUER says so to the
// kernel). A Ring does not know fibers; UringPoller (uring_poller.hpp) does.
#pragma once

#include <linux/io_uring.h>

#include <cstddef>
#include <cstdint>

namespace fib {

struct RingStats {
    std::uint64_t enters = 0;     // io_uring_enter system calls
    std::uint64_t submitted = 0;  // SQEs handed to the kernel
    std::uint64_t completed = 0;  // CQEs read
};

class Ring {
public:
    // Sets up a ring of `entries` SQEs (a power of two; the CQ gets twice as
    // many) with IORING_SETUP_* `flags`. Check ok(): if the kernel refuses,
    // error() is its errno (ENOSYS, EPERM, EINVAL...) and nothing is mapped.
    Ring(unsigned entries, unsigned flags);
    // Unmaps and closes. The caller must have waited for every operation it
    // started: the kernel may still write into their buffers otherwise.
    ~Ring();
    Ring(const Ring&) = delete;
    Ring& operator=(const Ring&) = delete;

    bool ok() const { return fd_ >= 0; }
    int error() const { return error_; }
    int fd() const { return fd_; }
    unsigned flags() const { return flags_; }        // the setup flags the kernel took
    unsigned features() const { return features_; }  // IORING_FEAT_*

    // The next free SQE, zeroed, or nullptr when the SQ is full (submit first).
    // It is handed to the kernel by the next submit().
    io_uring_sqe* next_sqe();
    unsigned unsubmitted() const { return sqe_tail_ - submitted_tail_; }
    // How many next_sqe() calls would succeed now.
    unsigned free_sqes() const;

    // One io_uring_enter: hands over every SQE filled since the last call and,
    // with `wait`, blocks until a CQE is there or `timeout_ms` has passed (-1:
    // no limit). Returns the kernel's result (SQEs consumed, or -errno;
    // -ETIME and -EINTR mean "no CQE came": not errors).
    int enter(bool wait, int timeout_ms);

    // Calls `on_cqe(const io_uring_cqe&)` for each CQE there now, in order,
    // then hands their slots back. Returns how many.
    template <class OnCqe>
    unsigned reap(OnCqe on_cqe);

    // The kernel holds completions that did not fit in the CQ (FEAT_NODROP):
    // an enter with GETEVENTS moves them in.
    bool overflowed() const;

    RingStats stats() const { return stats_; }
    void reset_stats() { stats_ = {}; }  // a kept ring, handed to a new owner

private:
    void release();                  // unmaps and closes what is there
    unsigned cq_ready_tail() const;  // acquire: the CQEs below it are written
    void cq_release(unsigned head);  // release: their slots may be reused

    int fd_ = -1;
    int error_ = 0;
    unsigned flags_ = 0, features_ = 0;
    // The SQ and CQ rings, and the SQE array: three mappings (two when the
    // kernel has IORING_FEAT_SINGLE_MMAP and the rings share one).
    void* sq_map_ = nullptr;
    std::size_t sq_map_size_ = 0;
    void* cq_map_ = nullptr;
    std::size_t cq_map_size_ = 0;
    io_uring_sqe* sqes_ = nullptr;
    std::size_t sqes_size_ = 0;
    // Inside sq_map_ and cq_map_, at the offsets io_uring_setup returned.
    unsigned* sq_head_ = nullptr;  // the kernel's: how far it has read
    unsigned* sq_tail_ = nullptr;  // ours: how far we have written
    unsigned* sq_flags_ = nullptr;
    unsigned* sq_array_ = nullptr;
    unsigned sq_mask_ = 0, sq_entries_ = 0;
    unsigned* cq_head_ = nullptr;  // ours: how far we have read
    unsigned* cq_tail_ = nullptr;  // the kernel's: how far it has written
    io_uring_cqe* cqes_ = nullptr;
    unsigned cq_mask_ = 0;
    // Our own copies: the SQEs filled (sqe_tail_) and those already handed
    // over by an enter (submitted_tail_).
    unsigned sqe_tail_ = 0, submitted_tail_ = 0;
    RingStats stats_;
};

template <class OnCqe>
unsigned Ring::reap(OnCqe on_cqe) {
    unsigned head = *cq_head_;  // only we write it
    const unsigned tail = cq_ready_tail();
    const unsigned count = tail - head;
    for (; head != tail; ++head) on_cqe(static_cast<const io_uring_cqe&>(cqes_[head & cq_mask_]));
    if (count) cq_release(head);
    stats_.completed += count;
    return count;
}

}  // namespace fib
