// wait_any.cpp — lesson 11: lesson 6's wait_any, whose timed read and send_all run on the ring when there is one.
//
// Replaces lesson 6's wait_any.cpp from stage 11 on: io::read and
// io::send_all with a timeout hand the call to the thread's io_uring (as
// io.cpp does), the deadline riding on the operation (uring_ops.cpp). The
// rest is lesson 6's, which said: one fiber, several registrations and a
// timer; the first to fire wakes it.
#include "fib/wait_any.hpp"

#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <cerrno>

#include "fib/cancel.hpp"
#include "fib/fatal.hpp"
#include "fib/uring_io.hpp"

namespace fib {
namespace {

// An Event set on this thread needs no wait at all. Sources listed before it
// may be ready too, and the lowest index must win as it would after a wait:
// one poll(2) with timeout 0 asks them. Returns Ready{} (timed_out()) when no
// Event is set.
Ready already_ready(std::span<const Source> sources) {
    std::size_t first_set = 0;
    while (first_set < sources.size() &&
           !(sources[first_set].event && sources[first_set].event->flag_set()))
        ++first_set;
    if (first_set == sources.size()) return Ready{};
    std::array<pollfd, kMaxSources> fds;
    for (std::size_t i = 0; i < first_set; ++i)
        fds[i] = pollfd{sources[i].fd, sources[i].events, 0};
    if (first_set > 0 && ::poll(fds.data(), first_set, 0) > 0)
        for (std::size_t i = 0; i < first_set; ++i)
            if (fds[i].revents) return Ready{static_cast<int>(i), fds[i].revents};
    return Ready{static_cast<int>(first_set), POLLIN};
}

// What woke the fiber, if anything did: a registration the Waiter fired, an
// Event's flag, or a cancel; the lowest index first.
Ready what_fired(std::span<const Source> sources, std::span<const Waiter::Waiting> waitings,
                 const CancelScope& cancellable) {
    for (std::size_t i = 0; i < sources.size(); ++i) {
        short revents = waitings[i].revents;
        if (sources[i].event && sources[i].event->flag_set()) revents |= POLLIN;
        if (revents) return Ready{static_cast<int>(i), revents};
    }
    return Ready{cancellable.woke_it() ? Ready::kCancelled : Ready::kTimedOut, 0};
}

// Registers every source and the deadline (if any) under one token, parks,
// then drops what did not fire. The Waiter, the timer heap, a same-thread
// Event::set and a cancel each wake the token, which ends the park once:
// however many fire before the fiber runs, it wakes once. It parks again,
// under the same token, only if nothing it can see fired (another fiber reset
// the Event first).
Ready wait_any_until(std::span<const Source> sources, const Clock::time_point* deadline,
                     const char* operation) {
    Waiter& waiter = Waiter::of_this_thread(operation);
    FiberRecord* self = FiberManager::current()->running();
    if (sources.empty() && !deadline)
        fatal("%s called wait_any() with no source and no timeout: nothing could ever wake it",
              label(*self).text);
    if (sources.size() > kMaxSources)
        fatal("%s called wait_any() with %zu sources; at most %zu", label(*self).text,
              sources.size(), kMaxSources);
    if (this_fiber::cancelled()) return Ready{Ready::kCancelled, 0};
    if (const Ready ready = already_ready(sources); !ready.timed_out()) return ready;

    const ParkToken me = self->manager->begin_wait();
    std::array<Waiter::Waiting, kMaxSources> waitings;
    for (std::size_t i = 0; i < sources.size(); ++i) {
        waitings[i] = Waiter::Waiting{sources[i].fd, sources[i].events, 0, me};
        waiter.watch(waitings[i]);
        if (sources[i].event) sources[i].event->attach(me);
    }
    Timer timer{deadline ? *deadline : Clock::time_point{}, me};
    if (deadline) TimerHeap::of_this_thread().add(timer);
    Ready ready;
    {
        const CancelScope cancellable(me);
        do {
            self->manager->park(
                me, WaitSite{deadline ? "wait_any (with a timeout)" : "wait_any", nullptr, nullptr});
            ready = what_fired(sources, std::span(waitings.data(), sources.size()), cancellable);
        } while (ready.timed_out() && !timer.expired);
    }
    if (deadline) TimerHeap::of_this_thread().cancel(timer);
    for (std::size_t i = 0; i < sources.size(); ++i) {
        waiter.unwatch(waitings[i]);
        if (sources[i].event) sources[i].event->detach();
    }
    return ready;
}

// The io helpers' way of failing: -1, with errno saying why the wait ended.
bool wait_failed(const Ready& ready) {
    if (!ready.timed_out() && !ready.cancelled()) return false;
    errno = ready.cancelled() ? ECANCELED : ETIMEDOUT;
    return true;
}

}  // namespace

Ready wait_any(std::span<const Source> sources) {
    return wait_any_until(sources, nullptr, "wait_any() was called");
}

Ready wait_any(std::span<const Source> sources, Clock::duration timeout) {
    const Clock::time_point deadline = deadline_after(timeout);
    return wait_any_until(sources, &deadline, "wait_any() was called");
}

Ready io::wait(int fd, short events, Clock::duration timeout) {
    const Source source{fd, events};
    const Clock::time_point deadline = deadline_after(timeout);
    return wait_any_until(std::span(&source, 1), &deadline,
                          "fib::io::wait() with a timeout was called");
}

// The deadline holds for the whole call: a wake-up that finds nothing to
// read (another reader got there first) does not restart the clock. After
// POLLNVAL the fd was closed behind this wait (see io.hpp): EBADF, and the
// number is not touched again.
ssize_t io::read(int fd, void* buffer, std::size_t size, Clock::duration timeout) {
    const Clock::time_point deadline = deadline_after(timeout);
    // A deadline already passed only looks (below, as lesson 6 does).
    UringPoller* uring = deadline > Clock::now() ? io::ring::of_this_thread() : nullptr;
    if (uring) return io::ring::read(*uring, fd, buffer, size, &deadline);
    const Source source{fd, POLLIN};
    for (;;) {
        const ssize_t n = ::read(fd, buffer, size);
        if (n >= 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) return n;
        if (errno == EINTR) continue;
        const Ready ready = wait_any_until(std::span(&source, 1), &deadline,
                                           "fib::io::read() with a timeout was called");
        if (wait_failed(ready)) return -1;
        if (ready.revents & POLLNVAL) {
            errno = EBADF;
            return -1;
        }
    }
}

ssize_t io::send_all(int socket, const void* data, std::size_t size, Clock::duration timeout) {
    const Clock::time_point deadline = deadline_after(timeout);
    UringPoller* uring = deadline > Clock::now() ? io::ring::of_this_thread() : nullptr;
    if (uring) return io::ring::put_all(*uring, socket, data, size, true, &deadline);
    const Source source{socket, POLLOUT};
    const auto* bytes = static_cast<const char*>(data);
    std::size_t done = 0;
    while (done < size) {
        const ssize_t n = ::send(socket, bytes + done, size - done, MSG_NOSIGNAL);
        if (n >= 0) {
            done += static_cast<std::size_t>(n);
            continue;
        }
        if (errno == EINTR) continue;
        if (errno != EAGAIN && errno != EWOULDBLOCK) return -1;
        const Ready ready = wait_any_until(std::span(&source, 1), &deadline,
                                           "fib::io::send_all() with a timeout was called");
        if (wait_failed(ready)) return -1;
        if (ready.revents & POLLNVAL) {
            errno = EBADF;
            return -1;
        }
    }
    return static_cast<ssize_t>(size);
}

}  // namespace fib
