// poller.hpp — lesson 11: lesson 5's Poller, which may also have I/O of its own in flight.
//
// Replaces lesson 5's poller.hpp from stage 11 on, adding three questions the
// Waiter and fib::io ask: in_flight() (operations the kernel still holds: the
// Waiter's fiber runs until they are done), uring() (the Poller that runs
// fib::io's calls as io_uring operations, if this is one) and describe_waits()
// (for the report of a Waiter destroyed too early). Lesson 5's said:
//
// Replaces lesson 4's poller.hpp from stage 5 on, adding stopped(): a Poller
// that keeps interest between waits (epoll) learns that nobody waits on
// anything for a while, and distrusts what it kept (see epoll_poller.cpp).
//
// The Waiter keeps track of which fiber waits for what; a Poller only tells
// the kernel which events are wanted on which fd, and asks which are ready.
// This lesson has one, on poll(2) (PollPoller); the build's list of Pollers is
// in pollers.hpp, and FIB_BACKEND or a Waiter's argument picks one by name.
#pragma once

#include <cstddef>
#include <cstdio>
#include <memory>
#include <vector>

namespace fib {

class UringPoller;

struct PollEvent {
    int fd;
    short revents;  // POLLIN, POLLOUT, POLLERR, POLLHUP, POLLNVAL, ...
};

class Poller {
public:
    virtual ~Poller() = default;
    virtual const char* name() const = 0;  // "poll"
    // From now on the Waiter wants `events` on `fd`; 0: nothing any more.
    virtual void watch(int fd, short events) = 0;
    // `fd` is about to be closed: forget everything about it.
    virtual void forget(int fd) = 0;
    // Waits up to `timeout_ms` (-1: no limit, 0: only look) and appends every
    // ready fd, with its revents, to `ready`. A signal may end it early, with
    // nothing appended.
    virtual void wait(int timeout_ms, std::vector<PollEvent>& ready) = 0;
    // The Waiter's fiber ends: nobody waits on any fd now.
    virtual void stopped() {}
    // Operations handed to the kernel whose completion has not come yet.
    virtual std::size_t in_flight() const { return 0; }
    // This Poller, if fib::io's calls run on it as operations (lesson 11).
    virtual UringPoller* uring() { return nullptr; }
    // One line per fiber whose operation the kernel holds.
    virtual void describe_waits(std::FILE* /*out*/) const {}
};

// The Poller named `name` ("poll"), or the default when `name` is nullptr:
// the FIB_BACKEND environment variable if set, else the first in
// poller_names(). Stops the program if there is no such Poller.
std::unique_ptr<Poller> make_poller(const char* name = nullptr);
// The Pollers this build has, the default first.
std::vector<const char*> poller_names();

std::unique_ptr<Poller> make_poll_poller();

}  // namespace fib
