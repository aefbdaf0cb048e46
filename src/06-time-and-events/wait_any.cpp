// wait_any.cpp — lesson 6: one fiber, several registrations and a timer; the first to fire wakes it.
#include "fib/wait_any.hpp"

#include <unistd.h>

#include <array>
#include <cerrno>

#include "fib/fatal.hpp"

namespace fib {
namespace {

// Registers every source and the deadline (if any), parks, then drops what
// did not fire. The Waiter and the timer heap wake a fiber only while it is
// still blocked, so however many fire before it runs, it wakes once.
Ready wait_any_until(std::span<const Source> sources, const Clock::time_point* deadline,
                     const char* operation) {
    Waiter& waiter = Waiter::of_this_thread(operation);
    FiberRecord* self = FiberManager::current()->running();
    if (sources.empty() && !deadline)
        fatal("%s called wait_any() with no source and no timeout: nothing could ever wake it",
              label(*self).text);
    if (sources.size() > kMaxSources)
        fatal("%s called wait_any() with %zu sources; at most %zu", label(*self).text, sources.size(),
              kMaxSources);
    std::array<Waiter::Waiting, kMaxSources> waitings;
    for (std::size_t i = 0; i < sources.size(); ++i) {
        waitings[i] = Waiter::Waiting{sources[i].fd, sources[i].events, 0, self};
        waiter.watch(waitings[i]);
    }
    Timer timer{deadline ? *deadline : Clock::time_point{}, self};
    if (deadline) TimerHeap::of_this_thread().add(timer);

    self->manager->park(WaitSite{deadline ? "wait_any (with a timeout)" : "wait_any", nullptr, nullptr});

    if (deadline) TimerHeap::of_this_thread().cancel(timer);
    Ready ready;
    for (std::size_t i = 0; i < sources.size(); ++i) {
        waiter.unwatch(waitings[i]);
        if (waitings[i].revents != 0 && ready.timed_out()) ready = Ready{static_cast<int>(i), waitings[i].revents};
    }
    return ready;
}

}  // namespace

Ready wait_any(std::span<const Source> sources) { return wait_any_until(sources, nullptr, "wait_any() was called"); }

Ready wait_any(std::span<const Source> sources, Clock::duration timeout) {
    const Clock::time_point deadline = deadline_after(timeout);
    return wait_any_until(sources, &deadline, "wait_any() was called");
}

Ready io::wait(int fd, short events, Clock::duration timeout) {
    const Source source{fd, events};
    const Clock::time_point deadline = deadline_after(timeout);
    return wait_any_until(std::span(&source, 1), &deadline, "fib::io::wait() with a timeout was called");
}

// The deadline holds for the whole call: a wake-up that finds nothing to
// read (another reader got there first) does not restart the clock.
ssize_t io::read(int fd, void* buffer, std::size_t size, Clock::duration timeout) {
    const Clock::time_point deadline = deadline_after(timeout);
    const Source source{fd, POLLIN};
    for (;;) {
        const ssize_t n = ::read(fd, buffer, size);
        if (n >= 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) return n;
        if (errno == EINTR) continue;
        if (wait_any_until(std::span(&source, 1), &deadline, "fib::io::read() with a timeout was called").timed_out()) {
            errno = ETIMEDOUT;
            return -1;
        }
    }
}

}  // namespace fib
