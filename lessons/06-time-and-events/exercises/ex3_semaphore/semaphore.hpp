// semaphore.hpp — lesson 6, exercise 3: a counting semaphore whose acquire can give up.
//
//   Semaphore slots(2);                        // two at a time
//   if (slots.try_acquire_for(100ms)) {        // false: timed out, or the fiber
//       use_the_resource();                    // was cancelled
//       slots.release();
//   }
//
// Built on a CondVar and fib::wait_for (timer.hpp). A wait that ends without a
// permit takes none, and leaves the next release() to a fiber still waiting.
#pragma once

#include <cstddef>

#include "fib/condvar.hpp"
#include "fib/timer.hpp"

class Semaphore {
public:
    explicit Semaphore(std::size_t permits) : permits_(permits) {}

    // Takes a permit, waiting at most `timeout` for one; false if none came in
    // time or the fiber was cancelled (Fiber::cancel) meanwhile.
    bool try_acquire_for(fib::Clock::duration timeout) {
        (void)timeout;
        return false;
    }
    void release() {}

    std::size_t available() const { return permits_; }

private:
    std::size_t permits_;
};
