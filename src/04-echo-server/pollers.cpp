// pollers.cpp — lesson 4: choosing a Poller by name from the build's list (pollers.hpp).
#include "fib/pollers.hpp"

#include <cstdlib>
#include <cstring>
#include <string>

#include "fib/fatal.hpp"

namespace fib {

std::vector<const char*> poller_names() {
    std::vector<const char*> names;
    for (const PollerEntry& entry : kPollers) names.push_back(entry.name);
    return names;
}

std::unique_ptr<Poller> make_poller(const char* name) {
    if (!name) name = std::getenv("FIB_BACKEND");
    if (!name) name = kPollers[0].name;
    std::string known;
    for (const PollerEntry& entry : kPollers) {
        if (std::strcmp(name, entry.name) == 0) return entry.make();
        known += known.empty() ? entry.name : std::string(", ") + entry.name;
    }
    fatal("no Waiter backend named '%s' in this build (it has: %s)", name, known.c_str());
}

}  // namespace fib
