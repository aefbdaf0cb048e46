// L02_blocked_fibers.hpp — make bench, lesson 2: a crowd of fibers, all blocked at once.
//
// Spawns `count` detached fibers on `manager`, lets each run once and park,
// and returns what `measure()` says while they are all blocked; then wakes
// them and waits until they have ended. For the memory rows: a blocked fiber
// holds its record, its stack and whatever else the stage gives a fiber. The
// parked fibers are strung through their own queue_link (free while a fiber
// is blocked), so keeping track of them allocates nothing.
#pragma once

#include "fib/fiber.hpp"
#include "fib/intrusive_list.hpp"

namespace bench {

template <class Measure>
auto while_fibers_blocked(fib::FiberManager& manager, long count, Measure measure) {
    fib::IntrusiveList<fib::FiberRecord, &fib::FiberRecord::queue_link> parked;
    for (long i = 0; i < count; ++i)
        fib::Fiber([&manager, &parked] {
            parked.push_back(manager.running());
            manager.park(manager.begin_wait(), fib::WaitSite{"bench: blocked", nullptr, &parked});
        }).detach();
    manager.yield();  // every fiber runs once and parks
    const auto measured = measure();
    // Each fiber on the list is parked in its one wait: wake that one.
    while (fib::FiberRecord* fiber = parked.pop_front()) manager.wake({fiber, fiber->waits});
    manager.wait_for_all();
    return measured;
}

}  // namespace bench
