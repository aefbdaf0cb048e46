// L10_fails_await_in_callback.cpp — lesson 10: must not compile. A task cannot suspend inside a
// callback that a library calls: a co_await would make the lambda a coroutine of its own, with
// a return type std::for_each knows nothing of, and GCC refuses it in a lambda whose return
// type is deduced (with "-> void", it finds no promise type for void). A fiber can wait there
// (io::wait inside the same lambda); a task hands such a wait to a fiber with co::in_fiber
// (bridge.hpp).
// expect-error: co_await.* cannot be used in a function with a deduced return type
#include <algorithm>
#include <vector>

#include "fib/awaitables.hpp"
#include "fib/task.hpp"

fib::Task<void> wait_for_each(const std::vector<int>& fds) {
    std::for_each(fds.begin(), fds.end(), [](int fd) { co_await fib::co::readable(fd); });
    co_return;
}
