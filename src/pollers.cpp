// pollers.cpp — lesson 4: which Pollers this build has (lesson 4: poll). From lesson 5 on,
// the build swaps this file for src/pollers_epoll.cpp, which adds epoll.
#include <cstdlib>
#include <cstring>

#include "fib/fatal.hpp"
#include "fib/poller.hpp"

namespace fib {

const std::vector<const char*>& poller_names() {
    static const std::vector<const char*> names = {"poll"};
    return names;
}

std::unique_ptr<Poller> make_poller(const char* name) {
    if (!name) name = std::getenv("FIB_BACKEND");
    if (!name) name = poller_names().front();
    if (std::strcmp(name, "poll") == 0) return make_poll_poller();
    fatal("no Waiter backend named '%s' in this build (it has: poll)", name);
}

}  // namespace fib
