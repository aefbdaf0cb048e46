// mailbox.hpp — lesson 2, exercise 3: a one-slot mailbox between the fibers of one manager.
//
// put() waits while the slot is full; take() waits while it is empty. A fiber that
// waits begins a wait (FiberManager::begin_wait), keeps its token where the other
// side will find it, and parks under it (FiberManager::park) with a WaitSite naming
// what it waits in, "Mailbox::put" or "Mailbox::take", and the mailbox itself as the
// object, so that a deadlock report says which mailbox a fiber is stuck on. Whoever
// fills or empties the slot wakes the token waiting on the other side
// (FiberManager::wake).
//
// To do: write put() and take(). One fiber at most waits on each side here (a
// second one is a misuse this exercise does not need to catch).
#pragma once

#include <optional>
#include <utility>

#include "fib/fiber_manager.hpp"
#include "fib/fiber_record.hpp"

template <typename T>
class Mailbox {
public:
    void put(T value) { slot_ = std::move(value); }
    T take() { return T{}; }

private:
    std::optional<T> slot_;
    fib::ParkToken waiting_to_put_;   // the wait of the fiber parked in put(), if any
    fib::ParkToken waiting_to_take_;  // the wait of the fiber parked in take(), if any
};
