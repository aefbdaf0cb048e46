// pollers_epoll.cpp — lesson 5: the Pollers of this build: epoll (the default) and poll.
// From lesson 5 on, the build uses this file instead of src/pollers.cpp.
#include <cstdlib>
#include <cstring>

#include "fib/epoll_poller.hpp"
#include "fib/fatal.hpp"
#include "fib/poller.hpp"

namespace fib {

const std::vector<const char*>& poller_names() {
    static const std::vector<const char*> names = {"epoll", "poll"};
    return names;
}

std::unique_ptr<Poller> make_poller(const char* name) {
    if (!name) name = std::getenv("FIB_BACKEND");
    if (!name) name = poller_names().front();
    if (std::strcmp(name, "epoll") == 0) return make_epoll_poller();
    if (std::strcmp(name, "poll") == 0) return make_poll_poller();
    fatal("no Waiter backend named '%s' in this build (it has: epoll, poll)", name);
}

}  // namespace fib
