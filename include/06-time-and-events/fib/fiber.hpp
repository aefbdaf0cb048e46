// fiber.hpp — lesson 6: lesson 2's Fiber handle, with cancel().
//
// Replaces lesson 2's fiber.hpp from stage 6 on: cancel() asks the fiber to
// give up its current wait, or its next one (see cancel.hpp).
//
//   fib::FiberManager manager;                  // main becomes fiber 0
//   fib::Fiber worker(count_to, 10);            // spawn: queued, runs when main yields or blocks
//   fib::Fiber named({.name = "logger"}, log);  // with options
//   worker.join();                              // main blocks until worker ends
//   named.detach();                             // or let it run on its own
//
// A Fiber must be joined or detached before it is destroyed. join() rethrows
// an exception that escaped the fiber. Misuse (joining itself, twice, or a
// detached fiber) stops the program with a message that names the fiber.
#pragma once

#include <concepts>
#include <cstdint>
#include <functional>
#include <new>
#include <tuple>
#include <type_traits>
#include <utility>

#include "fib/fatal.hpp"
#include "fib/fiber_manager.hpp"

namespace fib {

class Fiber {
public:
    Fiber() noexcept = default;

    template <class Function, class... Args>
        requires std::invocable<std::decay_t<Function>, std::decay_t<Args>...>
    explicit Fiber(Function&& function, Args&&... args)
        : Fiber(FiberOptions{}, std::forward<Function>(function), std::forward<Args>(args)...) {}

    template <class Function, class... Args>
        requires std::invocable<std::decay_t<Function>, std::decay_t<Args>...>
    Fiber(const FiberOptions& options, Function&& function, Args&&... args);

    ~Fiber();
    Fiber(Fiber&& other) noexcept;
    Fiber& operator=(Fiber&& other) noexcept;
    Fiber(const Fiber&) = delete;
    Fiber& operator=(const Fiber&) = delete;

    void join();
    void detach();
    void cancel();
    bool joinable() const noexcept { return status_ == Status::Joinable; }
    std::uint64_t id() const noexcept { return id_; }

private:
    enum class Status : std::uint8_t { Empty, Joinable, Joined, Detached };

    // Runs the callable stored at `body` once, on the fiber's stack, and ends
    // its life (destroying the function and its arguments) whether it returns
    // or throws.
    template <class Body>
    static void run_body(void* storage) {
        struct Destroy {
            Body* body;
            ~Destroy() { body->~Body(); }
        } destroy{static_cast<Body*>(storage)};
        std::apply([](auto& function, auto&... args) {
            std::invoke(std::move(function), std::move(args)...);
        }, *destroy.body);
    }

    FiberManager& manager_for(const char* operation) const;

    FiberRecord* record_ = nullptr;  // valid while Joinable
    std::uint64_t id_ = 0;           // kept for messages after join or detach
    Status status_ = Status::Empty;
};

template <class Function, class... Args>
    requires std::invocable<std::decay_t<Function>, std::decay_t<Args>...>
Fiber::Fiber(const FiberOptions& options, Function&& function, Args&&... args) {
    FiberManager* manager = &FiberManager::of_this_thread("a Fiber was created");
    // Decay-copy the function and its arguments onto the fiber's own stack, as
    // std::thread copies them into the new thread: the fiber owns them and may
    // outlive the caller's frame.
    using Body = std::tuple<std::decay_t<Function>, std::decay_t<Args>...>;
    FiberRecord* fiber = manager->create_fiber(options, sizeof(Body), alignof(Body));
    try {
        new (fiber->body) Body(std::forward<Function>(function), std::forward<Args>(args)...);
    } catch (...) {
        manager->abandon(fiber);
        throw;
    }
    fiber->run_body = &run_body<Body>;
    manager->start(fiber);
    record_ = fiber;
    id_ = fiber->id;
    status_ = Status::Joinable;
}

}  // namespace fib
