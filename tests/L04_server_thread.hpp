// L04_server_thread.hpp — lesson 4: a server under test on a thread of its own: any class with
// a constructor, port() and serve(stop_fd), as EchoServer has.
//
//   ServerThread<EchoServer> server(EchoOptions{.port = 0, .quiet = true});
//   ... clients talk to server.port; server.live->open_connections() while it runs ...
//   server.stop();   // a byte on the stop pipe; serve() returns; the thread is joined
//   server.after.manager, server.after.waiter, and server.live's counters, still readable
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <thread>

#include "fib/fiber_manager.hpp"
#include "fib/waiter.hpp"

// S is built on the server's thread, with its FiberManager and Waiter, and serve() runs on
// that thread's main until a byte arrives on the stop pipe. S itself outlives the thread, so
// that its counters can be read after stop(); `after` holds what the manager and the Waiter
// said once serve() had returned and every fiber (the Waiter's too) had ended.
template <class S>
struct ServerThread {
    static void set_flag(std::atomic<bool>& flag) {
        flag.store(true);
        flag.notify_all();
    }

    struct After {
        fib::ManagerStats manager;
        fib::WaiterStats waiter;
        bool returned = false;  // serve() came back
    };

    template <class... Args>
    explicit ServerThread(Args... args) {
        if (::pipe2(stop_pipe, O_CLOEXEC) != 0) std::abort();
        thread = std::thread([this, args...] {
            fib::FiberManager manager;
            fib::Waiter waiter;
            server.emplace(args...);
            tid = ::gettid();
            set_flag(started);
            server->serve(stop_pipe[0]);
            set_flag(returned);
            released.wait(false);
            manager.wait_for_all();
            after = {manager.stats(), waiter.stats(), true};
        });
        started.wait(false);
        live = &*server;
        port = live->port();
    }
    ~ServerThread() {
        stop();
        ::close(stop_pipe[0]);
        ::close(stop_pipe[1]);
    }
    // Ends serve() and joins the thread; `after` is valid from then on.
    void stop() {
        if (!thread.joinable()) return;
        stop_serving();
        set_flag(released);
        thread.join();
    }
    // Only ends serve(): the thread then waits for stop() before it tears the manager and the
    // Waiter down. For a test that must see serve() return in a state (out of fds) in which
    // the teardown itself could not be checked (see `started`).
    void stop_serving() {
        if (!returned.load()) [[maybe_unused]] ssize_t written = ::write(stop_pipe[1], "x", 1);
        returned.wait(false);
    }

    int stop_pipe[2] = {-1, -1};
    // Flags, not std::promise: UBSan checks a virtual call by reading the vtable through a
    // pipe, which fails in a test that has run out of fds (L04_echo_hostile_test.cpp) and
    // reports an "invalid vptr". So nothing with a vtable may die while fds are out: neither
    // a promise's shared state, nor the Waiter's Poller, nor std::thread's state.
    std::atomic<bool> started{false}, returned{false}, released{false};
    std::optional<S> server;  // built and served on `thread`; destroyed with this harness
    std::thread thread;
    const S* live = nullptr;  // its counters are atomics: readable from the test's thread
    std::uint16_t port = 0;
    pid_t tid = 0;            // the server's thread, for /proc/<tid>/...
    After after;
};
