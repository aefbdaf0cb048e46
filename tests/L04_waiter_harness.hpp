// L04_waiter_harness.hpp — lesson 4: what the Waiter's tests share: a pair of non-blocking fds,
// a pipe or a socketpair, closed by RAII; and a look at whether a thread sleeps in a system call.
#pragma once

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fstream>
#include <string>

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

// Whether thread `tid` sleeps inside a system call (the Waiter's: poll on lesson 4's backend),
// as /proc/self/task/<tid>/syscall shows it: the call's number first, or "running" when the
// thread runs, or -1 when it is off the CPU outside any system call.
inline bool in_system_call(pid_t tid) {
    std::ifstream file("/proc/self/task/" + std::to_string(tid) + "/syscall");
    long number = -1;
    return (file >> number) && number >= 0;
}

}  // namespace l04_waiter
