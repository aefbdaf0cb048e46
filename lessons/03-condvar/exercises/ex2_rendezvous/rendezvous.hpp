// rendezvous.hpp — lesson 3, exercise 2: an unbuffered channel, where send() returns
// only once a receiver has taken the value.
//
// Channel(0) is refused (L03_Channel.CapacityZeroThrowsInvalidArgument): a ring of
// no slots cannot hold the value while it waits for a receiver. A rendezvous keeps
// the one value being handed over, and makes the sender wait twice: for the slot
// to be free, then for a receiver to take what it put there.
#pragma once

#include <optional>
#include <utility>

#include "fib/condvar.hpp"

template <typename T>
class Rendezvous {
public:
    // Returns once a receiver has taken `value`.
    void send(T value) { (void)value; }
    // Waits for a sender, takes its value.
    T receive() { return T{}; }

private:
    std::optional<T> offered_;  // the value being handed over, if any
};
