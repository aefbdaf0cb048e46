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
// The values travel in an Inbox (lesson 8): a send puts its value in and sets
// the Event, both under the inbox's mutex, and the receiver checks the box
// before it waits, so a value sent while the receiver goes to sleep is found
// when the wait returns at once: no lost wake-up. Values arrive in the order
// they were sent, and from one sender in the order it sent them.
//
// One fiber at a time may receive, on the thread that made the Mailbox, which
// must have a FiberManager (the inbox's Event is that thread's). close() ends
// it, from any thread: sends fail, receive() returns what is left, then
// nothing; a cancel (lesson 6) ends a send (false) or a receive (nothing).
//
// Who may destroy it, and when: the receiver's thread, at any time; the
// destructor closes the box, then waits (shielded from cancels) for every
// send() and close() still inside it to leave. A send() or close() does its
// last touch of the box inside a critical section the destructor waits on,
// so once the receiver has its last value, or "closed and empty", the box may
// go: the sender that put the value, the closer, and the senders woken from a
// wait for room are done with it, or are waited for. What the box cannot
// count is a send() yet to *begin*: a sender must not start one once the
// receiver may destroy the box (say, after it closed the box itself).
#pragma once

#include <cstddef>
#include <mutex>
#include <optional>
#include <utility>

#include "fib/cancel.hpp"
#include "fib/inbox.hpp"
#include "fib/slots.hpp"

namespace fib {

template <typename T>
class Mailbox {
public:
    explicit Mailbox(std::size_t capacity) : slots_(capacity) {}
    // On the receiver's thread: see above.
    ~Mailbox() {
        close();
        std::unique_lock<std::mutex> lock(inside_mutex_);
        ending_ = true;
        while (inside_ > 0) {
            lock.unlock();
            {
                const CancelShield until_they_leave;
                values_.wait();  // a leaving sender nudges it
            }
            lock.lock();
        }
    }
    Mailbox(const Mailbox&) = delete;
    Mailbox& operator=(const Mailbox&) = delete;

    // From a fiber of a Cluster's thread: parks while the box is full. False
    // if the box is closed, or the fiber is cancelled while it waits.
    bool send(T value) {
        const Inside inside(*this);
        return slots_.take("Mailbox::send") && put(std::move(value));
    }
    // From any thread: false at once if the box is full or closed.
    bool try_send(T value) {
        const Inside inside(*this);
        return slots_.try_take() && put(std::move(value));
    }

    // From the receiving fiber: the oldest value, parking while there is none;
    // nothing if the fiber is cancelled, or the box is closed and empty.
    std::optional<T> receive() {
        for (;;) {
            if (std::optional<T> value = try_receive()) return value;
            if (values_.finished()) return std::nullopt;
            if (!values_.wait()) return std::nullopt;
        }
    }
    // Never parks: the oldest value, if any.
    std::optional<T> try_receive() {
        std::optional<T> value = values_.take_one();
        if (value) slots_.give_back();  // room for the next sender
        return value;
    }

    // From any thread: sends fail from now on, waiting senders and the receiver wake.
    void close() {
        const Inside inside(*this);
        values_.close();
        slots_.close();
    }

    std::size_t capacity() const { return slots_.capacity(); }

private:
    // A send() or close() in progress, counted so that the destructor can wait
    // for it. Its last touch of the box is the unlock in ~Inside, after which
    // the destructor, if it waits, may go on.
    struct Inside {
        explicit Inside(Mailbox& box) : box(box) {
            const std::lock_guard<std::mutex> lock(box.inside_mutex_);
            ++box.inside_;
        }
        ~Inside() {
            const std::lock_guard<std::mutex> lock(box.inside_mutex_);
            if (--box.inside_ == 0 && box.ending_) box.values_.nudge();
        }
        Mailbox& box;
    };

    // A value that does not go in (closed, or no memory for it) gives its slot back.
    bool put(T&& value) {
        try {
            if (values_.post(std::move(value))) return true;
        } catch (...) {
            slots_.give_back();
            throw;
        }
        slots_.give_back();
        return false;
    }

    Slots slots_;
    Inbox<T> values_;  // made here, on the receiver's thread
    std::mutex inside_mutex_;
    std::size_t inside_ = 0;  // sends and closes in progress
    bool ending_ = false;     // the destructor waits for them
};

}  // namespace fib
