// deadlock.cpp — lesson 2: the deadlock report: every blocked fiber, and the cycles of fibers waiting for each other.
//
// A deadlock is found for free: a fiber parks, the ready queue is empty, and
// nothing outside the manager can wake anyone (lesson 2 has no I/O and no
// timers). The report lists every blocked fiber with its WaitSite, then follows
// the wait sites that name a fiber (join waits for the fiber it joins) to print
// each cycle once, the thing to fix:
//
//   fib: deadlock: no fiber is ready to run, and these are blocked:
//     fiber 1 (a): in join, waiting for fiber 2 (b)
//     fiber 2 (b): in join, waiting for fiber 1 (a)
//     main: in wait_for_all
//     cycle: fiber 1 (a) waits for fiber 2 (b), fiber 2 (b) waits for fiber 1 (a)
//
// A wait on an object with no owner (a condition variable, a queue) names no fiber, so
// a chain through one ends there: anyone could have signalled it.
#include <cstdio>

#include "fib/fatal.hpp"
#include "fib/fiber_manager.hpp"

namespace fib {

namespace {

// The blocked fiber `fiber` waits for, or nullptr when its wait names none
// that is itself blocked (a fiber that is ready or finished breaks no chain).
const FiberRecord* waits_for(const FiberRecord* fiber) {
    const FiberRecord* other = fiber->waiting_for.fiber;
    return other && other->state == FiberState::Blocked ? other : nullptr;
}

// Prints the cycle that `start` begins, if it lies on one and is its member
// with the lowest id (so that each cycle is printed once, from the same place).
void print_cycle_from(const FiberRecord* start, std::size_t blocked) {
    const FiberRecord* fiber = start;
    for (std::size_t steps = 0; steps < blocked; ++steps) {
        fiber = waits_for(fiber);
        if (!fiber || fiber->id < start->id) return;
        if (fiber != start) continue;
        std::fprintf(stderr, "  cycle:");
        const FiberRecord* from = start;
        do {
            const FiberRecord* to = waits_for(from);
            std::fprintf(stderr, "%s %s waits for %s", from == start ? "" : ",",
                         label(*from).text, label(*to).text);
            from = to;
        } while (from != start);
        std::fprintf(stderr, "\n");
        return;
    }
}

}  // namespace

void FiberManager::report_deadlock() {
    std::fprintf(stderr, "fib: deadlock: no fiber is ready to run, and these are blocked:\n");
    std::size_t blocked = 0;
    for (FiberRecord* fiber = all_.front(); fiber; fiber = all_.next(fiber)) {
        if (fiber->state != FiberState::Blocked) continue;
        ++blocked;
        const WaitSite& site = fiber->waiting_for;
        std::fprintf(stderr, "  %s: in %s", label(*fiber).text, site.what);
        if (site.fiber) std::fprintf(stderr, ", waiting for %s", label(*site.fiber).text);
        if (site.object) std::fprintf(stderr, ", on %p", site.object);
        std::fprintf(stderr, "\n");
    }
    for (FiberRecord* fiber = all_.front(); fiber; fiber = all_.next(fiber))
        if (fiber->state == FiberState::Blocked) print_cycle_from(fiber, blocked);
    fatal("deadlock: every fiber is blocked and none can wake the others");
}

}  // namespace fib
