// uring_buffers.hpp — lesson 11: a provided-buffer ring: the kernel picks a receive buffer when data comes.
//
// A completion read hands the kernel a buffer for the whole wait: 10,000
// idle clients hold 10,000 buffers that no byte reaches (completion_echo's
// own-buffer mode). A provided-buffer ring turns that around. The program
// registers one pool of buffers with the ring (IORING_REGISTER_PBUF_RING), a
// receive names the pool instead of a buffer (IOSQE_BUFFER_SELECT), and the
// kernel takes a buffer from the pool only when data has arrived. Its CQE
// says which one (IORING_CQE_F_BUFFER, the id in the upper 16 bits of its
// flags). An idle connection holds no buffer; the memory is the pool's,
// whatever the number of clients.
//
//   fib::io::ring::BufferRing pool(256, 16 * 1024);    // on a uring thread
//   fib::io::ring::Lease chunk;
//   ssize_t n = fib::io::ring::receive(pool, socket, chunk);  // parks
//   fib::io::send_all(socket, chunk.data(), n);   // the bytes are in the pool's buffer...
//                                                 // ...which goes back when `chunk` goes
//
// The pool is a ring of its own, shared with the kernel like the SQ: we
// write buffer entries and move its tail (release), the kernel takes entries
// from its head. A buffer is the kernel's while it is in the ring, and the
// fiber's from the CQE that names it until the Lease is destroyed, which
// puts it back at the tail.
//
// Back-pressure, designed. A receive that finds the pool empty when its data
// comes fails with ENOBUFS. Nothing is lost: the bytes stay in the socket's
// receive buffer, and TCP's window tells the sender to stop. receive() then
// parks the fiber until some Lease gives a buffer back, and asks again. So
// the pool bounds the memory every client together can hold, a client that
// does not read holds at most the one buffer its fiber is sending from, and
// when every buffer is out the clients wait in their own TCP windows.
//
// Lifetimes: a BufferRing belongs to the thread that made it, whose Waiter
// must run the ring as operations (the uring backends but uring-poll). It
// must go before that Waiter, and after every Lease from it and every
// receive() on it (a fatal error names what is still out).
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>

#include "fib/condvar.hpp"
#include "fib/uring_poller.hpp"

namespace fib::io::ring {

class Lease;

class BufferRing {
public:
    // `count` buffers (a power of two, 1 to 32768) of `size` bytes, registered
    // with this thread's ring as the next free buffer group.
    BufferRing(unsigned count, unsigned size);
    ~BufferRing();
    BufferRing(const BufferRing&) = delete;
    BufferRing& operator=(const BufferRing&) = delete;

    std::uint16_t group() const { return group_; }
    unsigned size() const { return size_; }
    unsigned count() const { return count_; }
    unsigned in_ring() const { return count_ - leased_; }  // buffers the kernel may pick
    std::uint64_t exhausted() const { return exhausted_; }  // receives that met ENOBUFS

private:
    friend class Lease;
    friend ssize_t receive(BufferRing& pool, int socket, Lease& into);
    void put(std::uint16_t id);    // buffer `id` goes to the tail; the kernel may pick it again
    void give_back(std::uint16_t id);
    char* buffer(std::uint16_t id) const { return memory_ + std::size_t{id} * size_; }

    UringPoller& poller_;
    unsigned count_, size_;
    std::uint16_t group_;
    char* memory_ = nullptr;              // count_ * size_ bytes, the buffers
    io_uring_buf* entries_ = nullptr;     // the ring the kernel reads, count_ entries
    std::size_t entries_size_ = 0;
    std::uint16_t tail_ = 0;              // our copy; the kernel reads the shared one
    unsigned leased_ = 0;                 // buffers out of the ring, in Leases or on their way
    unsigned receiving_ = 0;              // receive() calls under way
    std::uint64_t exhausted_ = 0;
    CondVar given_back_;                  // fibers whose receive met ENOBUFS
};

// Bytes a receive got, in one of a BufferRing's buffers: the fiber's until
// the Lease is destroyed or reset, which gives the buffer back. Move-only;
// on the thread of its BufferRing only.
class Lease {
public:
    Lease() = default;
    ~Lease() { reset(); }
    Lease(Lease&& other) noexcept;
    Lease& operator=(Lease&& other) noexcept;
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;

    const char* data() const { return data_; }
    std::size_t size() const { return size_; }
    void reset();  // gives the buffer back now

private:
    friend ssize_t receive(BufferRing& pool, int socket, Lease& into);
    BufferRing* pool_ = nullptr;
    std::uint16_t id_ = 0;
    const char* data_ = nullptr;
    std::size_t size_ = 0;
};

// One IORING_OP_RECV on `socket` with a buffer from `pool`, parking until it
// completes: the byte count (`into` then holds them, after giving back what
// it held), 0 when the peer has closed, -1 with errno as io::read says
// (ECANCELED, EBADF when io::close closed the socket). ENOBUFS never comes
// out: the fiber waits for a buffer and asks again (see above).
ssize_t receive(BufferRing& pool, int socket, Lease& into);

}  // namespace fib::io::ring
