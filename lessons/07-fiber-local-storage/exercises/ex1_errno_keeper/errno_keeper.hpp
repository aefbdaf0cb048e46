// errno_keeper.hpp — lesson 7, exercise 1: an errno of its own for each fiber, kept across every switch.
//
// errno is one of libc's thread_locals: every fiber of a thread reads and writes
// the same one, so a fiber that parks between a failing call and its look at
// errno may find another fiber's error there. ErrnoKeeper is a FiberEnvironment
// (fiber_environment.hpp) whose switch routine keeps the errno of the fiber that
// switches away on that fiber's own stack, while the others run:
//
//   fib::FiberManager manager;
//   ErrnoKeeper keeper(manager);  // from main, before any fiber exists
//
// It keeps errno only: every other thread_local stays shared by the fibers.
#pragma once

#include <cerrno>
#include <cstdint>

#include "fib/context.hpp"
#include "fib/fatal.hpp"
#include "fib/fiber.hpp"
#include "fib/fiber_environment.hpp"

class ErrnoKeeper final : public fib::FiberEnvironment {
public:
    // Installs itself on `manager`, whose fibers from now on switch through
    // switch_keeping_errno. Only from main, while no other fiber exists.
    explicit ErrnoKeeper(fib::FiberManager& manager) : manager_(manager) {
        manager_.set_environment(this, &switch_keeping_errno);
    }
    ~ErrnoKeeper() {
        if (manager_.stats().records > 0)
            fib::fatal("the ErrnoKeeper was destroyed while fibers still exist");
        manager_.set_environment(nullptr, &fib::switch_context);
    }
    ErrnoKeeper(const ErrnoKeeper&) = delete;
    ErrnoKeeper& operator=(const ErrnoKeeper&) = delete;

    // Switches from `from` to `to` as switch_context (context.hpp) does. It
    // returns when another switch comes back to `from`, which must then find
    // errno as it left it, whatever the fibers that ran meanwhile wrote there.
    static void switch_keeping_errno(fib::Context* from, fib::Context* to, std::uintptr_t arg) {
        fib::switch_context(from, to, arg);
    }

    void fiber_created(fib::FiberRecord&) override {}
    // On the fiber, before its function: a fiber starts as a thread does, with
    // errno 0, not with whatever the fiber that started it had there.
    void fiber_starting(fib::FiberRecord&) override {}
    void fiber_ending(fib::FiberRecord&) override {}
    void fiber_released(fib::FiberRecord&) override {}

private:
    fib::FiberManager& manager_;
};
