// L04_waiter_harness.hpp — lesson 4: what the Waiter's tests share: a pair of non-blocking fds,
// a pipe or a socketpair, closed by RAII; and a look at whether a thread sleeps in the Poller's
// system call. Included by the L04 Waiter and close tests and the L05 tests.
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

// Whether thread `tid` sits in the Poller's system call: poll (7), or from lesson 5 on
// epoll_wait (232) or epoll_pwait (281), x86-64 numbers, as /proc/<pid>/task/<tid>/syscall
// shows it.
inline bool in_poll(pid_t tid) {
    std::ifstream file("/proc/self/task/" + std::to_string(tid) + "/syscall");
    std::string line;
    std::getline(file, line);
    for (const char* call : {"7 ", "232 ", "281 "})
        if (line.rfind(call, 0) == 0) return true;
    return false;
}

}  // namespace l04_waiter
