// uring.cpp — lesson 11: setting up an io_uring by hand, and the memory ordering of its indexes.
#include "fib/uring.hpp"

#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <ctime>

namespace fib {
namespace {

// glibc has no wrappers for these three: syscall(2) it is.
int io_uring_setup(unsigned entries, io_uring_params* params) {
    return static_cast<int>(::syscall(__NR_io_uring_setup, entries, params));
}

int io_uring_enter(int fd, unsigned to_submit, unsigned min_complete, unsigned flags, const void* arg,
                   std::size_t arg_size) {
    return static_cast<int>(::syscall(__NR_io_uring_enter, fd, to_submit, min_complete, flags, arg, arg_size));
}

template <class T>
T* at(void* base, std::uint32_t offset) {
    return reinterpret_cast<T*>(static_cast<char*>(base) + offset);
}

}  // namespace

// io_uring_setup makes the ring and says, in `params`, how big each part is
// and at which offset of which mapping each index lives. The mappings are
// made at fixed mmap offsets of the ring's fd: IORING_OFF_SQ_RING,
// IORING_OFF_CQ_RING (the same mapping when FEAT_SINGLE_MMAP) and
// IORING_OFF_SQES. MAP_POPULATE: the kernel touches them anyway.
Ring::Ring(unsigned entries, unsigned flags) {
    io_uring_params params{};
    params.flags = flags;
    int fd = io_uring_setup(entries, &params);
    // SINGLE_ISSUER and DEFER_TASKRUN came with kernel 6.1 (6.0 for the
    // first): an older one says EINVAL. They only make it faster: without.
    constexpr unsigned kNewer = IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN;
    if (fd < 0 && errno == EINVAL && (flags & kNewer)) {
        params = io_uring_params{};
        params.flags = flags & ~kNewer;
        fd = io_uring_setup(entries, &params);
    }
    if (fd < 0) {
        error_ = errno;
        return;
    }
    fd_ = fd;
    flags_ = params.flags;
    features_ = params.features;
    sq_map_size_ = params.sq_off.array + params.sq_entries * sizeof(unsigned);
    cq_map_size_ = params.cq_off.cqes + params.cq_entries * sizeof(io_uring_cqe);
    if (features_ & IORING_FEAT_SINGLE_MMAP)
        sq_map_size_ = cq_map_size_ = sq_map_size_ > cq_map_size_ ? sq_map_size_ : cq_map_size_;
    auto map = [&](std::size_t size, off_t offset) -> void* {
        void* where = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd_, offset);
        return where == MAP_FAILED ? nullptr : where;
    };
    sq_map_ = map(sq_map_size_, IORING_OFF_SQ_RING);
    cq_map_ = (features_ & IORING_FEAT_SINGLE_MMAP) ? sq_map_ : map(cq_map_size_, IORING_OFF_CQ_RING);
    sqes_size_ = params.sq_entries * sizeof(io_uring_sqe);
    sqes_ = static_cast<io_uring_sqe*>(map(sqes_size_, IORING_OFF_SQES));
    if (!sq_map_ || !cq_map_ || !sqes_) {
        error_ = errno;
        release();
        return;
    }
    sq_head_ = at<unsigned>(sq_map_, params.sq_off.head);
    sq_tail_ = at<unsigned>(sq_map_, params.sq_off.tail);
    sq_flags_ = at<unsigned>(sq_map_, params.sq_off.flags);
    sq_array_ = at<unsigned>(sq_map_, params.sq_off.array);
    sq_mask_ = *at<unsigned>(sq_map_, params.sq_off.ring_mask);
    sq_entries_ = params.sq_entries;
    cq_head_ = at<unsigned>(cq_map_, params.cq_off.head);
    cq_tail_ = at<unsigned>(cq_map_, params.cq_off.tail);
    cqes_ = at<io_uring_cqe>(cq_map_, params.cq_off.cqes);
    cq_mask_ = *at<unsigned>(cq_map_, params.cq_off.ring_mask);
    // Slot i of the SQ means SQE i, for good: the indirection array is there
    // for programs that fill SQEs out of order; we fill them in order.
    for (unsigned i = 0; i < sq_entries_; ++i) sq_array_[i] = i;
    sqe_tail_ = submitted_tail_ = *sq_tail_;
}

Ring::~Ring() { release(); }

void Ring::release() {
    if (sqes_) ::munmap(sqes_, sqes_size_);
    if (cq_map_ && cq_map_ != sq_map_) ::munmap(cq_map_, cq_map_size_);
    if (sq_map_) ::munmap(sq_map_, sq_map_size_);
    if (fd_ >= 0) ::close(fd_);
    sqes_ = nullptr;
    sq_map_ = cq_map_ = nullptr;
    fd_ = -1;
}

// The SQ is full when every slot from the kernel's head to our tail is
// taken. The kernel moves the head as it consumes SQEs (inside io_uring_enter,
// since we do not use SQPOLL); acquire, so that a slot it gave back is not
// written by us before it has finished reading it.
io_uring_sqe* Ring::next_sqe() {
    const unsigned head = std::atomic_ref<unsigned>(*sq_head_).load(std::memory_order_acquire);
    if (sqe_tail_ - head >= sq_entries_) return nullptr;
    io_uring_sqe* sqe = &sqes_[sqe_tail_ & sq_mask_];
    std::memset(sqe, 0, sizeof *sqe);
    ++sqe_tail_;
    return sqe;
}

unsigned Ring::free_sqes() const {
    const unsigned head = std::atomic_ref<unsigned>(*sq_head_).load(std::memory_order_acquire);
    return sq_entries_ - (sqe_tail_ - head);
}

// Publishing the SQEs is one store of the tail, with release: the kernel
// loads the tail with acquire, so every byte of every SQE written before it
// is what the kernel reads. Then io_uring_enter tells the kernel how many
// there are, and, with GETEVENTS, waits for completions. EXT_ARG (kernel
// 5.11) carries the timeout as a timespec, so no timeout SQE is needed.
// GETEVENTS is passed on every call, waiting or not: with DEFER_TASKRUN the
// kernel finishes completions only when we ask for events.
int Ring::enter(bool wait, int timeout_ms) {
    const unsigned to_submit = sqe_tail_ - submitted_tail_;
    std::atomic_ref<unsigned>(*sq_tail_).store(sqe_tail_, std::memory_order_release);
    __kernel_timespec timeout{};
    io_uring_getevents_arg arg{};
    unsigned flags = IORING_ENTER_GETEVENTS;
    const void* arg_pointer = nullptr;
    std::size_t arg_size = 0;
    if (wait && timeout_ms >= 0) {
        timeout.tv_sec = timeout_ms / 1000;
        timeout.tv_nsec = static_cast<long long>(timeout_ms % 1000) * 1'000'000;
        arg.ts = reinterpret_cast<std::uint64_t>(&timeout);
        flags |= IORING_ENTER_EXT_ARG;
        arg_pointer = &arg;
        arg_size = sizeof arg;
    }
    ++stats_.enters;
    const int result = io_uring_enter(fd_, to_submit, wait ? 1 : 0, flags, arg_pointer, arg_size);
    if (result < 0) return -errno;
    submitted_tail_ += static_cast<unsigned>(result);
    stats_.submitted += static_cast<unsigned>(result);
    return result;
}

// The kernel writes a CQE, then stores the CQ tail with release; our acquire
// load of the tail makes that CQE's bytes visible to us.
unsigned Ring::cq_ready_tail() const {
    return std::atomic_ref<unsigned>(*cq_tail_).load(std::memory_order_acquire);
}

// Moving the CQ head gives the slots back: release, so that our reads of
// those CQEs are done before the kernel may write new ones there.
void Ring::cq_release(unsigned head) { std::atomic_ref<unsigned>(*cq_head_).store(head, std::memory_order_release); }

bool Ring::overflowed() const {
    return std::atomic_ref<unsigned>(*sq_flags_).load(std::memory_order_relaxed) & IORING_SQ_CQ_OVERFLOW;
}

}  // namespace fib
