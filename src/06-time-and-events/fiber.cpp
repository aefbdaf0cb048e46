// fiber.cpp — lesson 6: lesson 2's Fiber handle, with cancel().
//
// Replaces lesson 2's fiber.cpp from stage 6 on.
#include "fib/fiber.hpp"

#include <cinttypes>

namespace fib {

Fiber::~Fiber() {
    if (status_ == Status::Joinable)
        fatal("the Fiber handle of %s was destroyed while joinable; call join() or detach() first",
              label(*record_).text);
}

Fiber::Fiber(Fiber&& other) noexcept
    : record_(std::exchange(other.record_, nullptr)),
      id_(other.id_),
      status_(std::exchange(other.status_, Status::Empty)) {}

Fiber& Fiber::operator=(Fiber&& other) noexcept {
    if (this != &other) {
        if (status_ == Status::Joinable)
            fatal("a Fiber was assigned over the joinable handle of %s; join or detach it first",
                  label(*record_).text);
        record_ = std::exchange(other.record_, nullptr);
        id_ = other.id_;
        status_ = std::exchange(other.status_, Status::Empty);
    }
    return *this;
}

// The handle must be joinable, and we must be on the thread of its manager.
FiberManager& Fiber::manager_for(const char* operation) const {
    switch (status_) {
        case Status::Empty: fatal("%s() on an empty Fiber handle", operation);
        case Status::Joined:
            fatal("%s() on fiber %" PRIu64 ", which was already joined", operation, id_);
        case Status::Detached:
            fatal("%s() on fiber %" PRIu64 ", which was detached", operation, id_);
        case Status::Joinable: break;
    }
    FiberManager* manager = FiberManager::current();
    if (manager != record_->manager)
        fatal("%s() on %s from a thread that is not its manager's", operation,
              label(*record_).text);
    return *manager;
}

void Fiber::join() {
    FiberManager& manager = manager_for("join");
    FiberRecord* fiber = std::exchange(record_, nullptr);
    status_ = Status::Joined;
    manager.join(fiber);  // may rethrow the fiber's exception
}

void Fiber::detach() {
    FiberManager& manager = manager_for("detach");
    FiberRecord* fiber = std::exchange(record_, nullptr);
    status_ = Status::Detached;
    manager.detach(fiber);
}

void Fiber::cancel() { manager_for("cancel").cancel(record_); }

}  // namespace fib
