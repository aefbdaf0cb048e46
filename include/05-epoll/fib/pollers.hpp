// pollers.hpp — lesson 5: the Pollers this build has: epoll, now the default, and poll.
//
// Replaces lesson 4's pollers.hpp from stage 5 on; make_poller() looks a name
// up here, so `FIB_BACKEND=poll` or `--backend poll` still picks poll.
#pragma once

#include <memory>

#include "fib/epoll_poller.hpp"
#include "fib/poller.hpp"

namespace fib {

struct PollerEntry {
    const char* name;
    std::unique_ptr<Poller> (*make)();
};

inline constexpr PollerEntry kPollers[] = {
    {"epoll", &make_epoll_poller},
    {"poll", &make_poll_poller},
};

}  // namespace fib
