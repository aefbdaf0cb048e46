// session.cpp — lesson 13: a blocked client's wait when there is no connection to watch.
#include "session.hpp"

#include "fib/wait_any.hpp"

namespace kv {

WaitEnd Session::wait_to_be_served(fib::Event& served, fib::Clock::duration timeout) {
    const fib::Ready ready = fib::wait_any({served}, timeout);
    if (ready.timed_out()) return WaitEnd::kTimedOut;
    return ready.cancelled() ? WaitEnd::kGone : WaitEnd::kServed;
}

}  // namespace kv
