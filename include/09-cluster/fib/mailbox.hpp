// mailbox.hpp — lesson 9: Mailbox<T>, a bounded queue from any thread of a Cluster to a fiber of one.
//
//   fib::Mailbox<std::string> box(64);     // made on the receiver's thread: room for 64
//   box.send(line);                        // a fiber on any thread: parks while it is full
//   std::optional<std::string> got = box.receive();   // the receiver: parks while it is empty
//
// Lesson 3's Channel between threads. A Channel parks and wakes fibers
// through the manager's queues, which only their own thread may touch; here
// the two sides are on different threads, so each wakes the other through
// its own thread:
//
//   the receiver   waits on an Event (lesson 6), which a send sets only when
//                  the box was empty; from another thread that is one eventfd
//                  write, and the receiver's Waiter sees it
//   a sender       waits for room in the box's Slots (slots.hpp), which a
//                  receive gives back; the slot goes to the first waiting
//                  sender, and its wake home to the sender's dispatcher
//
// Values arrive in the order they were sent, and from one sender in the order
// it sent them. The receiver checks the box before it waits, and a send sets
// the Event after its value is in, so a value sent while the receiver goes
// to sleep is found when the wait returns at once: no lost wake-up.
//
// One fiber at a time may receive, on the thread the Mailbox belongs to (the
// one that made it if that one had a FiberManager, else the first to wait).
// close() ends it: sends fail, receive() returns what is left, then nothing.
#pragma once

#include <cstddef>
#include <deque>
#include <mutex>
#include <optional>
#include <utility>

#include "fib/event.hpp"
#include "fib/slots.hpp"

namespace fib {

template <typename T>
class Mailbox {
public:
    explicit Mailbox(std::size_t capacity) : slots_(capacity) {}
    Mailbox(const Mailbox&) = delete;
    Mailbox& operator=(const Mailbox&) = delete;

    // From a fiber of a Cluster's thread: parks while the box is full. False
    // if the box is closed, or the fiber is cancelled while it waits.
    bool send(T value) { return slots_.take("Mailbox::send") && put(std::move(value)); }
    // From any thread: false at once if the box is full or closed.
    bool try_send(T value) { return slots_.try_take() && put(std::move(value)); }

    // From the receiving fiber: the oldest value, parking while there is none;
    // nothing if the fiber is cancelled, or the box is closed and empty.
    std::optional<T> receive() {
        for (;;) {
            if (std::optional<T> value = try_receive()) return value;
            {
                const std::lock_guard<std::mutex> lock(mutex_);
                if (closed_ && values_.empty()) return std::nullopt;
            }
            if (!arrived_.wait()) return std::nullopt;
        }
    }
    // Never parks: the oldest value, if any.
    std::optional<T> try_receive() {
        std::optional<T> value;
        {
            const std::lock_guard<std::mutex> lock(mutex_);
            if (values_.empty()) return value;
            value.emplace(std::move(values_.front()));
            values_.pop_front();
        }
        slots_.give_back();  // room for the next sender
        return value;
    }

    // From any thread: sends fail from now on, waiting senders and the receiver wake.
    void close() {
        {
            const std::lock_guard<std::mutex> lock(mutex_);
            closed_ = true;
        }
        slots_.close();
        arrived_.set();
    }

    std::size_t capacity() const { return slots_.capacity(); }

private:
    // The value goes in under the mutex, the Event is set after: a receiver
    // that finds it empty and then waits finds the Event set.
    bool put(T&& value) {
        bool first;
        {
            const std::lock_guard<std::mutex> lock(mutex_);
            if (closed_) {
                slots_.give_back();
                return false;
            }
            first = values_.empty();
            values_.push_back(std::move(value));
        }
        if (first) arrived_.set();
        return true;
    }

    Slots slots_;
    std::mutex mutex_;
    std::deque<T> values_;
    bool closed_ = false;
    Event arrived_;
};

}  // namespace fib
