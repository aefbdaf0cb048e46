// L04_waiter_harness.hpp — lesson 4: what the Waiter's tests share: a pair of non-blocking fds,
// a pipe or a socketpair, closed by RAII. Included by tests/L04_waiter_test.cpp and
// tests/L04_waiter_misuse_test.cpp.
#pragma once

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fib/unique_fd.hpp"

namespace l04_waiter {

struct Pair {
    fib::UniqueFd first, second;  // a pipe's read and write ends, or a socketpair's two ends
};

// A non-blocking pipe, or (`socket`) a Unix stream socketpair.
inline Pair make_fds(bool socket = false) {
    int fds[2] = {-1, -1};
    const int made = socket
                         ? ::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, fds)
                         : ::pipe2(fds, O_NONBLOCK | O_CLOEXEC);
    if (made != 0) ADD_FAILURE() << "pipe2/socketpair failed";
    return {fib::UniqueFd(fds[0]), fib::UniqueFd(fds[1])};
}

}  // namespace l04_waiter
