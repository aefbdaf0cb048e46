// uring_poller.cpp — lesson 11: the ring as the Waiter's Poller: one-shot polls, one enter per turn.
#include "fib/uring_poller.hpp"

#include <poll.h>
#include <pthread.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "fib/fatal.hpp"
#include "fib/fiber_manager.hpp"

namespace fib {
namespace {

// A ring is shared by a parent and its child after fork(), mappings and all,
// like an epoll instance (lesson 5): a child must not use its parent's.
// pthread_atfork counts forks, in the child only; the check is a load.
std::atomic<unsigned> forks_seen{0};

unsigned forks_so_far() {
    static const bool registered = [] {
        pthread_atfork(nullptr, nullptr, [] { forks_seen.fetch_add(1, std::memory_order_relaxed); });
        return true;
    }();
    (void)registered;
    return forks_seen.load(std::memory_order_relaxed);
}

// The SQ size: FIB_URING_ENTRIES (a power of two, 2 to 32768), else 256.
// The CQ gets twice as many; what does not fit waits in the kernel
// (FEAT_NODROP) until reap() makes room.
unsigned ring_entries() {
    const char* text = std::getenv("FIB_URING_ENTRIES");
    if (!text) return 256;
    const long entries = std::strtol(text, nullptr, 10);
    if (entries < 2 || entries > 32768 || (entries & (entries - 1)))
        fatal("FIB_URING_ENTRIES=%s: need a power of two from 2 to 32768", text);
    return static_cast<unsigned>(entries);
}

unsigned setup_flags(const UringOptions& options) {
    return options.defer_taskrun ? IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN : 0;
}

// A thread keeps the rings its Waiters used, drained, for the next Waiter it
// makes. Closing a ring is not over when close(2) returns: the kernel
// finishes its clean-up later, in a worker that then queues work on every
// thread that submitted to the ring, and runs it by interrupting that
// thread's next system call. A blocking call with a timeout (a recv under
// SO_RCVTIMEO, a connect under SO_SNDTIMEO) then fails with EINTR, long
// after the Waiter is gone (L10_CoEcho.FiveThousandConnectDisconnectCyclesLeakNoFdAndNoTask
// saw it, 77 times in 200 rounds of a Waiter made, used and destroyed). Kept,
// a ring is closed when its thread ends, which no later call can notice; and
// a new Waiter on the thread skips the set-up. At most four, one per kind
// (SQ size and flags); a ring kept before a fork() is never reused in the
// child, which shares it with its parent.
struct KeptRing {
    unsigned entries, flags, forks;
    std::unique_ptr<Ring> ring;
};
thread_local std::vector<KeptRing> kept_rings;

std::unique_ptr<Ring> take_ring(unsigned entries, unsigned flags) {
    for (auto kept = kept_rings.begin(); kept != kept_rings.end(); ++kept) {
        if (kept->entries != entries || kept->flags != flags || kept->forks != forks_so_far()) continue;
        std::unique_ptr<Ring> ring = std::move(kept->ring);
        kept_rings.erase(kept);
        ring->reset_stats();
        return ring;
    }
    return std::make_unique<Ring>(entries, flags);
}

void keep_ring(unsigned entries, unsigned flags, std::unique_ptr<Ring> ring) {
    if (kept_rings.size() >= 4) kept_rings.erase(kept_rings.begin());
    kept_rings.push_back(KeptRing{entries, flags, forks_so_far(), std::move(ring)});
}

// A CQE's user_data says what it is for:
//   0                        nothing to do (the CQE of a cancel, of an operation or a poll)
//   ends in binary 1         a poll: generation << 32 | fd << 1 | 1
//   ends in binary 10, or 4  a message between threads' rings (uring_msg.cpp)
//   anything else            the address of a UringOp (aligned, so it ends in 000)
constexpr std::uint64_t kIgnore = 0;
std::uint64_t poll_data(int fd, std::uint32_t generation) {
    return std::uint64_t{generation} << 32 | static_cast<std::uint64_t>(fd) << 1 | 1;
}

}  // namespace

// Kernels before 6.1 refuse DEFER_TASKRUN with EINVAL: then the Ring is set
// up without the two flags (uring.cpp), and works the same, a little slower.
UringPoller::UringPoller(const UringOptions& options)
    : options_(options),
      entries_(ring_entries()),
      setup_flags_(setup_flags(options)),
      owned_ring_(take_ring(entries_, setup_flags_)),
      ring_(*owned_ring_),
      forks_(forks_so_far()) {
    options_.defer_taskrun = ring_.flags() & IORING_SETUP_DEFER_TASKRUN;
}

// Nothing may stay with the kernel once the ring is given up: every
// operation still in flight is cancelled, and its CQE waited for, so that no
// buffer is written after its owner let go. Polls hold no buffer, but they
// are removed and waited for too, as is every other SQE's CQE: the ring is
// kept for the thread's next Waiter, which must find it empty. With
// FIB_URING_STATS=1 in the environment it then prints the ring's counts in
// one line on stderr, which make bench-echo-lesson11 turns into
// io_uring_enter calls per message.
UringPoller::~UringPoller() {
    if (!ring_.ok() || forks_so_far() != forks_) return;
    for (std::size_t fd = 0; fd < fds_.size(); ++fd) {
        if (fds_[fd].armed) remove_poll(static_cast<int>(fd), fds_[fd]);
        for (UringOp* op = fds_[fd].operations; op; op = op->next) cancel(*op);
    }
    bool drained = true;
    // CQEs and SQEs pair up but for messages (uring_msg.cpp): a message
    // received is a CQE no SQE of ours asked for, and a message sent is an
    // SQE whose success posts no CQE here.
    while (ring_.unsubmitted() > 0 ||
           ring_.stats().completed - messages_received_ + messages_sent_ < ring_.stats().submitted) {
        const int result = ring_.enter(true, -1);
        if (result < 0 && result != -ETIME && result != -EINTR && result != -EBUSY && result != -EAGAIN) {
            drained = false;  // a ring that may still hold requests is closed, never handed on
            break;
        }
        reap();
    }
    const char* report = std::getenv("FIB_URING_STATS");
    if (report && std::strcmp(report, "1") == 0) {
        const RingStats stats = ring_.stats();
        std::fprintf(stderr, "fib: ring %s: %llu io_uring_enter calls, %llu SQEs, %llu CQEs\n", options_.name,
                     static_cast<unsigned long long>(stats.enters), static_cast<unsigned long long>(stats.submitted),
                     static_cast<unsigned long long>(stats.completed));
    }
    if (drained) keep_ring(entries_, setup_flags_, std::move(owned_ring_));
}

void UringPoller::check_owner() const {
    if (forks_so_far() != forks_)
        fatal("a Waiter made before fork() was used in the child: the child shares the parent's io_uring; "
              "make a new FiberManager and Waiter in the child");
}

UringPoller::FdState& UringPoller::state(int fd) {
    if (static_cast<std::size_t>(fd) >= fds_.size()) fds_.resize(static_cast<std::size_t>(fd) + 1);
    return fds_[static_cast<std::size_t>(fd)];
}

// With the SQ full, hand what is there to the kernel and read what it has
// finished; -EBUSY says the CQ (and the kernel's overflow list) is full: reap
// makes room, and the enter is tried again.
io_uring_sqe& UringPoller::sqe() {
    for (;;) {
        if (io_uring_sqe* next = ring_.next_sqe()) return *next;
        const int result = ring_.enter(false, 0);
        if (result < 0 && result != -EBUSY && result != -EAGAIN && result != -EINTR)
            fatal("io_uring_enter: %s", std::strerror(-result));
        reap();
    }
}

void UringPoller::submit() {
    while (ring_.unsubmitted() > 0) {
        const int result = ring_.enter(false, 0);
        if (result < 0 && result != -EBUSY && result != -EAGAIN && result != -EINTR)
            fatal("io_uring_enter: %s", std::strerror(-result));
        reap();
    }
}

// The Waiter asks for the union of what the fd's fibers wait for. A one-shot
// POLL_ADD for it goes in the next enter; a different set replaces it (the
// old one is cancelled, and its generation no longer matches, so its CQE is
// dropped). The poll values are poll(2)'s.
void UringPoller::watch(int fd, short events) {
    check_owner();
    FdState& fd_state = state(fd);
    if (events == fd_state.armed) return;
    if (fd_state.armed) remove_poll(fd, fd_state);
    fd_state.armed = events;
    if (!events) return;
    ++fd_state.generation;
    io_uring_sqe& poll = sqe();
    poll.opcode = IORING_OP_POLL_ADD;
    poll.fd = fd;
    poll.poll32_events = static_cast<std::uint16_t>(events);
    poll.user_data = poll_data(fd, fd_state.generation);
}

// A poll is taken back with ASYNC_CANCEL, not POLL_REMOVE: every POLL_ADD
// must end with a CQE, or the destructor waits for it for ever. A poll the
// fd has woken is owned by its completion until that runs, and with
// DEFER_TASKRUN it runs only in this thread's next enter, after the SQEs of
// that enter. POLL_REMOVE cannot take an owned poll: it says -EALREADY and
// leaves it to the completion, which polls the fd again and, finding it no
// longer ready (an Event::try_wait read the eventfd in between), re-arms the
// one-shot poll and posts nothing. A cluster thread's ring kept such a poll
// on an eventfd it then closed, and hung in ~UringPoller (L09_Cluster's
// APostToAFullThreadParksThePosterUntilAPostedFiberEnds, about once in 500
// runs). ASYNC_CANCEL marks the poll cancelled whoever owns it, and its
// completion then posts -ECANCELED:
// L11_Poll.EverySqeOfAPollTakenBackAfterItsWakeUpGetsItsCqeUnderDeferTaskrun.
void UringPoller::remove_poll(int fd, FdState& fd_state) {
    io_uring_sqe& remove = sqe();
    remove.opcode = IORING_OP_ASYNC_CANCEL;
    remove.addr = poll_data(fd, fd_state.generation);
    remove.user_data = kIgnore;
    fd_state.armed = 0;
    ++fd_state.generation;
}

// io::close is about to close `fd`. Its poll goes; each of its operations is
// cancelled, and marked so that its caller says EBADF; then this thread
// waits, right here, until every one of their CQEs is in. Only then may the
// number be closed and handed to a new file: an operation still in flight,
// or an SQE not yet submitted, would otherwise reach whatever file gets the
// number next (liburing's issue 363).
void UringPoller::forget(int fd) {
    if (fd < 0 || static_cast<std::size_t>(fd) >= fds_.size()) return;
    check_owner();
    FdState& fd_state = fds_[static_cast<std::size_t>(fd)];
    // A message still on its way about this fd must not reach the next file
    // that gets the number: it carries the old life, and is dropped.
    fd_state.life = 0;
    if (fd_state.armed) remove_poll(fd, fd_state);
    if (!fd_state.operations) return;
    for (UringOp* op = fd_state.operations; op; op = op->next) {
        op->fd_closed = true;
        cancel(*op);
    }
    drain_fd(fd);
}

void UringPoller::drain_fd(int fd) {
    while (fds_[static_cast<std::size_t>(fd)].operations) {
        const int result = ring_.enter(true, -1);
        if (result < 0 && result != -ETIME && result != -EINTR && result != -EBUSY && result != -EAGAIN)
            fatal("io_uring_enter: %s", std::strerror(-result));
        reap();
    }
}

// One turn of the Waiter: one enter submits what the fibers filled and, when
// `timeout_ms` is not 0, waits for a completion. Polls that fired become
// `ready` for the Waiter; operations that completed wake their fibers. An
// enter that would only look (timeout 0, nothing to submit) is skipped: the
// CQ is in our memory. DEFER_TASKRUN is the exception: its completions are
// finished only inside an enter.
void UringPoller::wait(int timeout_ms, std::vector<PollEvent>& ready) {
    check_owner();
    if (!pending_.empty()) timeout_ms = 0;
    if (timeout_ms != 0 || ring_.unsubmitted() > 0 || options_.defer_taskrun) {
        const int result = ring_.enter(timeout_ms != 0, timeout_ms);
        if (result < 0 && result != -ETIME && result != -EINTR && result != -EBUSY && result != -EAGAIN)
            fatal("io_uring_enter: %s", std::strerror(-result));
    }
    reap();
    ready.insert(ready.end(), pending_.begin(), pending_.end());
    pending_.clear();
}

void UringPoller::reap() {
    reaping_ = true;
    auto dispatch = [this](const io_uring_cqe& cqe) { on_cqe(cqe); };
    ring_.reap(dispatch);
    // Completions that did not fit wait in the kernel (FEAT_NODROP); an
    // enter with GETEVENTS moves them into the room just made.
    while (ring_.overflowed()) {
        ring_.enter(false, 0);
        if (ring_.reap(dispatch) == 0) break;
    }
    reaping_ = false;
}

void UringPoller::on_cqe(const io_uring_cqe& cqe) {
    if (cqe.user_data == kIgnore) return;
    if (is_message(cqe.user_data)) {
        on_message(cqe);
        return;
    }
    if (cqe.user_data & 1) {
        const int fd = static_cast<int>((cqe.user_data & 0xffffffff) >> 1);
        FdState& fd_state = state(fd);
        if (static_cast<std::uint32_t>(cqe.user_data >> 32) != fd_state.generation || !fd_state.armed) return;
        fd_state.armed = 0;  // one-shot: it is gone
        const short revents = cqe.res >= 0 ? static_cast<short>(cqe.res) : cqe.res == -EBADF ? POLLNVAL : POLLERR;
        pending_.push_back(PollEvent{fd, revents});
        return;
    }
    auto* op = reinterpret_cast<UringOp*>(static_cast<std::uintptr_t>(cqe.user_data));
    if ((cqe.flags & IORING_CQE_F_MORE) && op->on_cqe) {
        op->on_cqe(*op, cqe);  // a multishot operation's result; the operation goes on
        return;
    }
    op->result = cqe.res;
    op->flags = cqe.flags;
    op->done = true;
    FdState& fd_state = state(op->fd);
    if (op->prev) op->prev->next = op->next;
    else fd_state.operations = op->next;
    if (op->next) op->next->prev = op->prev;
    --in_flight_;
    if (op->on_cqe) op->on_cqe(*op, cqe);
    else op->token.fiber->manager->wake(op->token);
}

void UringPoller::describe_waits(std::FILE* out) const {
    for (const FdState& fd : fds_)
        for (const UringOp* op = fd.operations; op; op = op->next)
            std::fprintf(out, "  %s: %s on fd %d, which the kernel holds (io_uring)\n", label(*op->token.fiber).text,
                         op->what, op->fd);
}

}  // namespace fib
