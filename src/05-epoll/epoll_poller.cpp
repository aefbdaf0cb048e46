// epoll_poller.cpp — lesson 5: the Poller on epoll: an interest set kept in the kernel.
#include "fib/epoll_poller.hpp"

#include <poll.h>
#include <pthread.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstring>

#include "fib/fatal.hpp"

namespace fib {
namespace {

// epoll's event bits are poll's (EPOLLIN == POLLIN, ... EPOLLRDHUP == POLLRDHUP).
static_assert(EPOLLIN == POLLIN && EPOLLOUT == POLLOUT && EPOLLPRI == POLLPRI &&
              EPOLLERR == POLLERR && EPOLLHUP == POLLHUP && EPOLLRDHUP == POLLRDHUP);

constexpr short kAlwaysReported = POLLERR | POLLHUP;
constexpr int kBatch = 256;  // events taken per epoll_wait

// How many times this process has been forked into a child: an epoll
// instance is shared by the parent and the child after fork(), interest set
// and all, so a Poller made before the last fork must not be used in the
// child. pthread_atfork counts, in the child only; the check is a load.
std::atomic<unsigned> forks_seen{0};

unsigned forks_so_far() {
    static const bool counting = [] {
        pthread_atfork(nullptr, nullptr, [] { forks_seen.fetch_add(1, std::memory_order_relaxed); });
        return true;
    }();
    (void)counting;
    return forks_seen.load(std::memory_order_relaxed);
}

class EpollPoller final : public Poller {
public:
    EpollPoller() : epoll_(::epoll_create1(EPOLL_CLOEXEC)), forks_(forks_so_far()) {
        if (epoll_ < 0) fatal("epoll_create1 failed: %s", std::strerror(errno));
    }
    // The epoll fd is the Poller's own, never waited on, so a bare close(2):
    // io::close would tell the Waiter, which is being destroyed with it.
    ~EpollPoller() override { ::close(epoll_); }
    EpollPoller(const EpollPoller&) = delete;
    EpollPoller& operator=(const EpollPoller&) = delete;

    const char* name() const override { return "epoll"; }

    // Only a wider interest needs a system call; a narrower one waits until
    // an unwanted event shows it matters (see wait()). One case more: a wait
    // on an fd whose registration sat idle (nobody waited on it) through an
    // epoll_wait, or through a stop of the Waiter's fiber. Its file may have
    // been closed behind the Waiter's back (a bare close(), not io::close) and
    // the number reused: the kernel dropped that registration with the file,
    // and relying on it would leave the new waiter asleep for ever. So it is
    // re-armed first (EPOLL_CTL_MOD), which fails with ENOENT for a file the
    // kernel no longer knows (see control()). A fiber that waits again at
    // once, as the echo loop does, makes no such call.
    void watch(int fd, short events) override {
        FdState& state = state_of(fd);
        const bool was_idle = state.wanted == 0;
        state.wanted = events;
        const short missing = static_cast<short>(events & ~state.registered);
        if (missing)
            control(fd, state, static_cast<short>(state.registered | events));
        else if (events && was_idle && state.registered && state.idle_since != epochs_)
            control(fd, state, state.registered);
        if (events == 0) state.idle_since = epochs_;
    }

    void stopped() override { ++epochs_; }

    void forget(int fd) override {
        if (static_cast<std::size_t>(fd) >= states_.size()) return;
        FdState& state = states_[fd];
        if (state.registered) {
            ++interest_changes_;
            ::epoll_ctl(epoll_, EPOLL_CTL_DEL, fd, nullptr);  // still the old file
        }
        state.registered = state.wanted = 0;
        ++state.generation;
    }

    void wait(int timeout_ms, std::vector<PollEvent>& ready) override {
        if (forks_so_far() != forks_)
            fatal("an epoll Waiter made before fork() was used in the child process: parent and "
                  "child share its epoll instance; a child must make its own FiberManager and "
                  "Waiter, or exec");
        if (!synthetic_.empty()) {
            // A report made for a registration that forget() has since ended is
            // stale: the number may name another file by now.
            for (const Synthetic& report : synthetic_)
                if (report.generation == states_[report.event.fd].generation) ready.push_back(report.event);
            synthetic_.clear();
            timeout_ms = 0;  // report those at once, with whatever else is ready
        }
        ++epochs_;
        const int count = ::epoll_wait(epoll_, events_, kBatch, timeout_ms);
        if (count < 0) {
            if (errno == EINTR) return;
            fatal("the Waiter's epoll_wait failed: %s", std::strerror(errno));
        }
        for (int i = 0; i < count; ++i) report(events_[i], ready);
    }

    std::uint64_t interest_changes() const { return interest_changes_; }

private:
    // An event the backend reports itself (epoll_ctl refused the fd), tagged
    // like a kernel event with the registration it is about.
    struct Synthetic {
        PollEvent event;
        std::uint32_t generation;
    };

    struct FdState {
        short wanted = 0;      // what the Waiter's fibers wait for now
        short registered = 0;  // what the kernel watches (0: not in the set)
        std::uint32_t generation = 0;
        std::uint64_t idle_since = 0;  // epochs_ when nobody waited on it any more
    };

    FdState& state_of(int fd) {
        if (static_cast<std::size_t>(fd) >= states_.size()) states_.resize(fd + 1);
        return states_[fd];
    }

    static std::uint64_t tag(int fd, std::uint32_t generation) {
        return static_cast<std::uint64_t>(generation) << 32 | static_cast<std::uint32_t>(fd);
    }

    // Makes the kernel watch `events` on fd (0: remove it from the set).
    void control(int fd, FdState& state, short events) {
        epoll_event event{};
        event.events = static_cast<std::uint32_t>(events);
        event.data.u64 = tag(fd, state.generation);
        const int operation = events == 0       ? EPOLL_CTL_DEL
                              : state.registered ? EPOLL_CTL_MOD
                                                 : EPOLL_CTL_ADD;
        ++interest_changes_;
        int result = ::epoll_ctl(epoll_, operation, fd, &event);
        if (result < 0 && errno == ENOENT && operation == EPOLL_CTL_MOD) {
            // Closed behind our back (not through io::close) and reopened: the
            // kernel dropped the old registration. Start this fd afresh.
            ++state.generation;
            event.data.u64 = tag(fd, state.generation);
            ++interest_changes_;
            result = ::epoll_ctl(epoll_, EPOLL_CTL_ADD, fd, &event);
        }
        if (result == 0) {
            state.registered = events;
        } else if (errno == EBADF) {
            synthetic_.push_back({PollEvent{fd, POLLNVAL}, state.generation});  // what poll says of a closed fd
        } else if (errno == EPERM) {
            // A regular file: epoll refuses it, poll calls it always ready.
            synthetic_.push_back({PollEvent{fd, static_cast<short>(events & (POLLIN | POLLOUT))}, state.generation});
        } else if (events != 0) {
            fatal("epoll_ctl on fd %d failed: %s", fd, std::strerror(errno));
        }
    }

    // One event from the kernel: dropped if it is for a forgotten fd, narrowed
    // to what is wanted, and the interest narrowed too if it was too wide.
    void report(const epoll_event& event, std::vector<PollEvent>& ready) {
        const int fd = static_cast<int>(event.data.u64 & 0xffffffffu);
        FdState& state = states_[fd];
        if (event.data.u64 >> 32 != state.generation) return;  // stale: a closed fd's
        const auto revents = static_cast<short>(event.events);
        // Nobody waits for it (level-triggered, it would come back at every
        // epoll_wait): stop watching what is not wanted.
        if (state.wanted == 0 || (revents & ~(state.wanted | kAlwaysReported)))
            control(fd, state, state.wanted);
        const short wanted = static_cast<short>(revents & (state.wanted | kAlwaysReported));
        if (state.wanted && wanted) ready.push_back(PollEvent{fd, wanted});
    }

    int epoll_;
    unsigned forks_;  // forks_so_far() when made
    std::uint64_t epochs_ = 0;  // epoll_waits made and Waiter stops seen
    std::vector<FdState> states_;          // indexed by fd
    std::vector<Synthetic> synthetic_;     // to report at the next wait (EBADF, EPERM)
    epoll_event events_[kBatch];
    std::uint64_t interest_changes_ = 0;
};

}  // namespace

std::unique_ptr<Poller> make_epoll_poller() { return std::make_unique<EpollPoller>(); }

std::uint64_t epoll_ctl_calls(const Poller& poller) {
    const auto* epoll = dynamic_cast<const EpollPoller*>(&poller);
    return epoll ? epoll->interest_changes() : 0;
}

}  // namespace fib
