// channel.hpp — lesson 6: lesson 3's Channel, whose send and receive a cancel ends.
//
// Replaces lesson 3's channel.hpp from stage 6 on: the CondVar waits throw
// Cancelled when the fiber is cancelled (cancel.hpp), and send and receive
// turn that into their own way of saying "no more": false and std::nullopt,
// as for a closed channel. What lesson 3 said:
//
//   fib::Channel<int> numbers(4);          // holds at most 4 values
//   // producer fiber:                     // consumer fiber:
//   for (int i = 0; i < 100; ++i)          while (std::optional<int> n = numbers.receive())
//       numbers.send(i);                       use(*n);
//   numbers.close();                       // ends once the channel is closed and drained
//
// send() waits while the channel is full and receive() while it is empty: the
// two CondVars are exactly "wait until there is room" and "wait until there is
// a value". close() wakes everyone: a receiver still gets every value sent
// before the close, then std::nullopt; a send() after close() returns false.
// The values live in a ring of `capacity` slots allocated once, up front.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <stdexcept>
#include <utility>

#include "fib/cancel.hpp"
#include "fib/condvar.hpp"

namespace fib {

template <class T>
class Channel {
public:
    explicit Channel(std::size_t capacity)
        : slots_(capacity ? std::make_unique<std::optional<T>[]>(capacity)
                          : throw std::invalid_argument("fib::Channel: capacity must be at least 1")),
          capacity_(capacity) {}
    Channel(const Channel&) = delete;
    Channel& operator=(const Channel&) = delete;

    // Waits for room, then queues `value`. False (and `value` dropped) if the
    // channel is closed, before or during the wait.
    // Also false if the fiber is cancelled before or while it waits.
    bool send(T value) {
        try {
            while (count_ == capacity_ && !closed_) not_full_.wait(WaitSite{"Channel::send", nullptr, this});
        } catch (const Cancelled&) {
            return false;
        }
        if (closed_) return false;
        slots_[(head_ + count_) % capacity_].emplace(std::move(value));
        ++count_;
        not_empty_.notify_one();
        return true;
    }

    // Waits for a value and takes the oldest. std::nullopt once the channel is
    // closed and every value sent before the close has been received.
    // Also std::nullopt if the fiber is cancelled before or while it waits.
    std::optional<T> receive() {
        try {
            while (count_ == 0 && !closed_) not_empty_.wait(WaitSite{"Channel::receive", nullptr, this});
        } catch (const Cancelled&) {
            return std::nullopt;
        }
        if (count_ == 0) return std::nullopt;
        std::optional<T> value = std::move(slots_[head_]);
        slots_[head_].reset();
        head_ = (head_ + 1) % capacity_;
        --count_;
        not_full_.notify_one();
        return value;
    }

    // No more sends. Wakes every waiting sender (they return false) and
    // receiver (they drain what is left, then get std::nullopt).
    void close() {
        closed_ = true;
        not_full_.notify_all();
        not_empty_.notify_all();
    }

    bool closed() const { return closed_; }
    std::size_t size() const { return count_; }
    std::size_t capacity() const { return capacity_; }

private:
    std::unique_ptr<std::optional<T>[]> slots_;  // a ring: head_ is the oldest value
    std::size_t capacity_;
    std::size_t head_ = 0;
    std::size_t count_ = 0;
    bool closed_ = false;
    CondVar not_full_;   // senders wait here while count_ == capacity_
    CondVar not_empty_;  // receivers wait here while count_ == 0
};

}  // namespace fib
