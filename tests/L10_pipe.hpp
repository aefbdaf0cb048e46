// L10_pipe.hpp — lesson 10: a non-blocking pipe whose two ends close themselves, for the tests
// in which a task waits on an fd that a fiber writes.
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>

#include "fib/unique_fd.hpp"

struct Pipe {
    fib::UniqueFd read, write;
    Pipe() {
        int fds[2];
        if (::pipe2(fds, O_NONBLOCK | O_CLOEXEC) != 0) std::abort();
        read.reset(fds[0]);
        write.reset(fds[1]);
    }
};
