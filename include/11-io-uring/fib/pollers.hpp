// pollers.hpp — lesson 11: the Pollers this build has: io_uring, now the default, then epoll, poll and the rungs.
//
// Replaces lesson 5's pollers.hpp from stage 11 on. "uring" is the best rung
// of lesson 11's ablation, and the default; the other uring-* names are the
// rungs below it,
// kept so that make bench-echo-lesson11 can put them side by side:
//   uring-poll    the ring only as a poller (POLL_ADD); fib::io as in lesson 5
//   uring-ops     fib::io as operations, one io_uring_enter per operation
//   uring-batch   the operations wait for the Waiter's one enter per turn
//   uring         + SINGLE_ISSUER and DEFER_TASKRUN (without them on EINVAL)
//   uring-msg     + another thread's Event::set as an IORING_OP_MSG_RING
//                 message, not an eventfd write (without MSG_RING: as uring)
// Where io_uring is refused, each of them falls back to epoll, saying so.
// Lesson 5's said:
//
// Replaces lesson 4's pollers.hpp from stage 5 on; make_poller() looks a name
// up here, so `FIB_BACKEND=poll` or `--backend poll` still picks poll.
#pragma once

#include <memory>

#include "fib/epoll_poller.hpp"
#include "fib/poller.hpp"
#include "fib/uring_poller.hpp"

namespace fib {

struct PollerEntry {
    const char* name;
    std::unique_ptr<Poller> (*make)();
};

inline constexpr UringOptions kUringRungs[] = {
    {"uring", true, true, true},
    {"uring-poll", false, true, false},
    {"uring-ops", true, false, false},
    {"uring-batch", true, true, false},
    {"uring-msg", true, true, true, true},
};

inline constexpr PollerEntry kPollers[] = {
    {"uring", [] { return make_uring_poller(kUringRungs[0]); }},
    {"epoll", &make_epoll_poller},
    {"poll", &make_poll_poller},
    {"uring-poll", [] { return make_uring_poller(kUringRungs[1]); }},
    {"uring-ops", [] { return make_uring_poller(kUringRungs[2]); }},
    {"uring-batch", [] { return make_uring_poller(kUringRungs[3]); }},
    {"uring-msg", [] { return make_uring_poller(kUringRungs[4]); }},
};

}  // namespace fib
