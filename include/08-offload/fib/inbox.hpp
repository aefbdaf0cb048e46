// inbox.hpp — lesson 8: Inbox<T>, what other threads hand one thread: a queue, its Event, one wake-up per batch.
//
//   fib::Inbox<Result> inbox;               // on its home thread, which has a FiberManager
//   inbox.post(std::move(result));          // any thread: false once it is closed
//   std::deque<Result> batch;
//   inbox.take_all(batch);                  // the home thread: everything posted so far
//   if (batch.empty()) inbox.wait();        // a home fiber: parks until the next post
//
// The protocol every cross-thread queue of the course follows, written once:
// offload's homes (offload.cpp) are the first of them.
//
//   post     under the mutex: the value goes in, and the Event is set if the
//            inbox was empty (from another thread, one eventfd write, lesson 6)
//   take     under the mutex: the home thread takes what is there
//   wait     the home fiber waits on the Event only after a take found nothing
//
// No lost wake-up: a post after the take finds the inbox empty and sets the
// Event, whose eventfd holds the news until the wait reads it. One write per
// batch: posts that find values waiting only queue theirs.
//
// Who may destroy it, and when. post() touches the inbox only under its
// mutex, the Event's set() included, so once the home thread has taken the
// mutex after a post (any take, close or release), that post is done with the
// inbox. What the protocol cannot know is whether a post is yet to *begin*:
// the owner must, before it destroys the inbox (offload counts its work under
// way, and its home, kept for its thread's life, goes only with no work out). And the Event must end on the
// home thread: its eventfd is registered with that thread's Waiter, which
// only a close there tells (lesson 5 says what a close behind its back costs). So the Event is made by
// open() and closed by release(), both on the home thread; an Inbox made open
// is opened by its constructor, and released by its destructor, which must
// then run at home (it stops the program otherwise, see event.hpp).
#pragma once

#include <cstddef>
#include <deque>
#include <mutex>
#include <optional>
#include <utility>

#include "fib/event.hpp"

namespace fib {

template <typename T>
class Inbox {
public:
    struct Closed {};
    // Made on its home thread: open at once.
    Inbox() { open(); }
    // Made elsewhere, closed: its home thread opens it later (open()).
    explicit Inbox(Closed) {}
    ~Inbox() { release(); }
    Inbox(const Inbox&) = delete;
    Inbox& operator=(const Inbox&) = delete;

    // The home thread: makes the Event; posts succeed until close().
    void open() {
        const std::lock_guard<std::mutex> lock(mutex_);
        arrived_.emplace();
        closed_ = false;
    }
    // Any thread: posts fail from now on; a home fiber in wait() returns.
    void close() {
        const std::lock_guard<std::mutex> lock(mutex_);
        closed_ = true;
        if (arrived_) arrived_->set();
    }
    // The home thread: close() if nothing is left to take; true if it closed.
    // (No post can slip in between the look and the close.)
    bool close_if_empty() {
        const std::lock_guard<std::mutex> lock(mutex_);
        if (!items_.empty()) return false;
        closed_ = true;
        return true;
    }
    // Any thread: sets the Event without posting, for a home fiber to look
    // again at something beside the inbox (its own thread's news, say).
    void nudge() {
        const std::lock_guard<std::mutex> lock(mutex_);
        if (arrived_) arrived_->set();
    }
    // The home thread: close(), and the Event goes, its eventfd closed here.
    void release() {
        const std::lock_guard<std::mutex> lock(mutex_);
        closed_ = true;
        arrived_.reset();
    }

    // Any thread: queues `value`; false, with `value` untouched, once closed.
    // Everything happens under the mutex, the Event's set() included; `woke`
    // (if given) says whether this post was the batch's first, which set it.
    bool post(T&& value, bool* woke = nullptr) {
        const std::lock_guard<std::mutex> lock(mutex_);
        if (closed_) return false;
        const bool first = items_.empty();
        items_.push_back(std::move(value));
        if (first) arrived_->set();
        if (woke) *woke = first;
        return true;
    }

    // The home thread: everything posted so far, oldest first, added to `into`.
    void take_all(std::deque<T>& into) {
        const std::lock_guard<std::mutex> lock(mutex_);
        if (into.empty()) {
            into.swap(items_);
            return;
        }
        for (T& item : items_) into.push_back(std::move(item));
        items_.clear();
    }
    // The home thread: the oldest value posted, if any.
    std::optional<T> take_one() {
        const std::lock_guard<std::mutex> lock(mutex_);
        if (items_.empty()) return std::nullopt;
        std::optional<T> value(std::move(items_.front()));
        items_.pop_front();
        return value;
    }
    // Closed, with nothing left to take.
    bool finished() {
        const std::lock_guard<std::mutex> lock(mutex_);
        return closed_ && items_.empty();
    }

    // A home fiber, while the inbox is open or closed but not released: parks
    // until a post or a close may have come since the last take (at once if one
    // has). False if the fiber is cancelled (lesson 6).
    bool wait() { return arrived_->wait(); }

private:
    std::mutex mutex_;
    std::deque<T> items_;
    bool closed_ = true;
    std::optional<Event> arrived_;  // while open (made and closed on the home thread)
};

}  // namespace fib
