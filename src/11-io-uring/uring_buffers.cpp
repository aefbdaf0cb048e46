// uring_buffers.cpp — lesson 11: registering a provided-buffer ring, receiving into it, giving buffers back.
#include "fib/uring_buffers.hpp"

#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstring>
#include <utility>

#include "fib/cancel.hpp"
#include "fib/fatal.hpp"
#include "fib/uring_io.hpp"
#include "fib/waiter.hpp"

namespace fib::io::ring {
namespace {

int io_uring_register(int ring_fd, unsigned opcode, void* arg, unsigned count) {
    return static_cast<int>(::syscall(__NR_io_uring_register, ring_fd, opcode, arg, count));
}

UringPoller& poller_for_buffers() {
    UringPoller* poller = of_this_thread();
    if (!poller)
        fatal("a BufferRing was made on a thread whose Waiter does not run fib::io on an io_uring (its backend is "
              "'%s'); use --backend uring (or uring-ops, uring-batch)",
              Waiter::current() ? Waiter::current()->poller().name() : "none: no Waiter");
    return *poller;
}

}  // namespace

// Two mappings: the buffers, and the ring of entries that point at them,
// page-aligned as the kernel wants it. Registering names the ring's address,
// its size and a group id, which receives then name in the SQE; a group id
// another pool of this ring holds says EEXIST, and the next one is tried.
// Then every buffer goes into the ring.
BufferRing::BufferRing(unsigned count, unsigned size)
    : poller_(poller_for_buffers()), count_(count), size_(size), group_(0) {
    if (count == 0 || count > 32768 || (count & (count - 1)) || size == 0)
        fatal("BufferRing(%u, %u): need a power of two from 1 to 32768 buffers, of at least one byte", count, size);
    void* memory = ::mmap(nullptr, std::size_t{count} * size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    entries_size_ = std::size_t{count} * sizeof(io_uring_buf);
    void* entries = ::mmap(nullptr, entries_size_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (memory == MAP_FAILED || entries == MAP_FAILED) fatal("BufferRing: mmap: %s", std::strerror(errno));
    memory_ = static_cast<char*>(memory);
    entries_ = static_cast<io_uring_buf*>(entries);
    for (unsigned group = 0;; ++group) {
        io_uring_buf_reg reg{};
        reg.ring_addr = reinterpret_cast<std::uintptr_t>(entries_);
        reg.ring_entries = count;
        reg.bgid = static_cast<std::uint16_t>(group);
        if (io_uring_register(poller_.ring().fd(), IORING_REGISTER_PBUF_RING, &reg, 1) == 0) {
            group_ = static_cast<std::uint16_t>(group);
            break;
        }
        if (errno != EEXIST || group == 0xffff)
            fatal("BufferRing: IORING_REGISTER_PBUF_RING: %s (a kernel before 5.19 has no provided-buffer rings)",
                  std::strerror(errno));
    }
    for (unsigned id = 0; id < count; ++id) put(static_cast<std::uint16_t>(id));
}

// The kernel must be done with the ring and every buffer before they are
// unmapped: no receive may be under way and no Lease out.
BufferRing::~BufferRing() {
    if (receiving_ || leased_)
        fatal("a BufferRing was destroyed with %u receive(s) under way and %u buffer(s) leased; end those first",
              receiving_, leased_);
    if (of_this_thread() != &poller_)
        fatal("a BufferRing was destroyed on another thread than its own, or after its thread's Waiter");
    io_uring_buf_reg reg{};
    reg.bgid = group_;
    if (io_uring_register(poller_.ring().fd(), IORING_UNREGISTER_PBUF_RING, &reg, 1) < 0)
        fatal("BufferRing: IORING_UNREGISTER_PBUF_RING: %s", std::strerror(errno));
    ::munmap(entries_, entries_size_);
    ::munmap(memory_, std::size_t{count_} * size_);
}

// The entry is written first, then the tail moves: a release store, so that
// the kernel, which reads the tail with acquire, sees the entry complete.
// The tail lives in the first entry's reserved field (linux/io_uring.h).
// The header's io_uring_buf_ring is no help in C++: it declares `bufs` with
// __DECLARE_FLEX_ARRAY, an empty struct before the array, and an empty
// struct takes a byte in C++ (none in C), so `bufs` lands 8 bytes late, and
// the kernel finds no buffer where we wrote one. The entries are an array of
// io_uring_buf from the ring's first byte; the tail is the first one's resv.
static_assert(offsetof(io_uring_buf, resv) == 14 && sizeof(io_uring_buf) == 16);
void BufferRing::put(std::uint16_t id) {
    io_uring_buf& entry = entries_[tail_ & (count_ - 1)];
    entry.addr = reinterpret_cast<std::uintptr_t>(buffer(id));
    entry.len = size_;
    entry.bid = id;
    ++tail_;
    std::atomic_ref<std::uint16_t>(entries_[0].resv).store(tail_, std::memory_order_release);
}

// A buffer back in the ring may end a receive's wait for one: every such
// fiber asks again (those whose socket has no data yet take no buffer, and
// the others race for it; a loser waits again).
void BufferRing::give_back(std::uint16_t id) {
    put(id);
    --leased_;
    given_back_.notify_all();
}

// A moved-from Lease is empty: no buffer, no bytes.
Lease::Lease(Lease&& other) noexcept
    : pool_(std::exchange(other.pool_, nullptr)),
      id_(other.id_),
      data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)) {}

Lease& Lease::operator=(Lease&& other) noexcept {
    if (this != &other) {
        reset();
        pool_ = std::exchange(other.pool_, nullptr);
        id_ = other.id_;
        data_ = std::exchange(other.data_, nullptr);
        size_ = std::exchange(other.size_, 0);
    }
    return *this;
}

void Lease::reset() {
    if (!pool_) return;
    std::exchange(pool_, nullptr)->give_back(id_);
    data_ = nullptr;
    size_ = 0;
}

// The SQE names the group, not a buffer, and asks for at most one buffer's
// worth. A result with IORING_CQE_F_BUFFER carries the buffer's id: from
// here it is the fiber's, and only a Lease gives it back. The flag comes with
// every result that has bytes, a cancelled receive's too (its bytes are
// kept, as io::read keeps them).
ssize_t receive(BufferRing& pool, int socket, Lease& into) {
    into.reset();
    UringPoller& poller = pool.poller_;
    ++pool.receiving_;
    struct Leave {
        BufferRing& pool;
        ~Leave() { --pool.receiving_; }
    } leave{pool};
    for (;;) {
        UringOp op;
        op.fd = socket;
        op.what = "fib::io::ring::receive";
        const long n = run(poller, op, IORING_OP_RECV, nullptr, [&](io_uring_sqe& sqe) {
            sqe.flags |= IOSQE_BUFFER_SELECT;
            sqe.buf_group = pool.group_;
            sqe.len = pool.size_;
        });
        if (op.flags & IORING_CQE_F_BUFFER) {
            const auto id = static_cast<std::uint16_t>(op.flags >> IORING_CQE_BUFFER_SHIFT);
            ++pool.leased_;
            into.pool_ = &pool;
            into.id_ = id;
            into.data_ = pool.buffer(id);
            into.size_ = n > 0 ? static_cast<std::size_t>(n) : 0;
        }
        if (n >= 0 || (errno != ENOBUFS && errno != EINTR)) return n;
        if (errno == EINTR) continue;
        // The pool was empty when the data came: the data waits in the
        // socket, and this fiber waits for a buffer.
        ++pool.exhausted_;
        try {
            while (pool.in_ring() == 0) pool.given_back_.wait(WaitSite{"fib::io::ring::receive: a free buffer", nullptr, &pool});
        } catch (const Cancelled&) {
            errno = ECANCELED;
            return -1;
        }
    }
}

}  // namespace fib::io::ring
