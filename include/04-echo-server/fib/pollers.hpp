// pollers.hpp — lesson 4: the Pollers this build has, by name, the default first.
//
// make_poller() (src/04-echo-server/pollers.cpp) looks a name up here.
#pragma once

#include <memory>

#include "fib/poller.hpp"

namespace fib {

struct PollerEntry {
    const char* name;
    std::unique_ptr<Poller> (*make)();
};

inline constexpr PollerEntry kPollers[] = {
    {"poll", &make_poll_poller},
};

}  // namespace fib
