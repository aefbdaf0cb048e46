// poll_poller.cpp — lesson 4: the Poller on poll(2): the whole fd list, passed on every call.
#include <poll.h>

#include <cerrno>
#include <cstring>

#include "fib/fatal.hpp"
#include "fib/poller.hpp"

namespace fib {
namespace {

class PollPoller final : public Poller {
public:
    const char* name() const override { return "poll"; }

    void watch(int fd, short events) override {
        if (static_cast<std::size_t>(fd) >= slot_of_fd_.size()) slot_of_fd_.resize(fd + 1, -1);
        int& slot = slot_of_fd_[fd];
        if (events == 0) {
            drop(fd);
        } else if (slot >= 0) {
            pollfds_[slot].events = events;
        } else {
            slot = static_cast<int>(pollfds_.size());
            pollfds_.push_back(pollfd{fd, events, 0});
        }
    }

    void forget(int fd) override { drop(fd); }

    // The list stays in the order the fds were first watched, so the fibers
    // woken by one call are woken in the order they began to wait.
    void wait(int timeout_ms, std::vector<PollEvent>& ready) override {
        pack();
        const int count = ::poll(pollfds_.data(), pollfds_.size(), timeout_ms);
        if (count < 0) {
            if (errno == EINTR) return;
            fatal("the Waiter's poll() on %zu fds failed: %s", pollfds_.size(), std::strerror(errno));
        }
        for (const pollfd& entry : pollfds_)
            if (entry.revents) ready.push_back(PollEvent{entry.fd, entry.revents});
    }

private:
    // A dropped fd leaves a hole (fd -1, which poll skips) until the next
    // wait() packs the list: dropping is O(1) and the order is kept.
    void drop(int fd) {
        if (static_cast<std::size_t>(fd) >= slot_of_fd_.size() || slot_of_fd_[fd] < 0) return;
        pollfds_[slot_of_fd_[fd]].fd = -1;
        slot_of_fd_[fd] = -1;
    }

    void pack() {
        std::size_t kept = 0;
        for (const pollfd& entry : pollfds_) {
            if (entry.fd < 0) continue;
            slot_of_fd_[entry.fd] = static_cast<int>(kept);
            pollfds_[kept++] = pollfd{entry.fd, entry.events, 0};
        }
        pollfds_.resize(kept);
    }

    std::vector<pollfd> pollfds_;  // poll()'s argument: one entry per watched fd
    std::vector<int> slot_of_fd_;  // fd -> index in pollfds_, or -1
};

}  // namespace

std::unique_ptr<Poller> make_poll_poller() { return std::make_unique<PollPoller>(); }

}  // namespace fib
