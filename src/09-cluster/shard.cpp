// shard.cpp — lesson 9: a thread of a Cluster: its body, its inbox, its dispatcher, its stop.
#include "fib/shard.hpp"

#include <cstdio>
#include <deque>
#include <utility>

#include "fib/cancel.hpp"
#include "fib/fatal.hpp"
#include "fib/fiber.hpp"
#include "fib/waiter.hpp"

namespace fib {

namespace {

// Which shard a thread is, found by its manager. Not a thread_local: from
// lesson 7 on, a thread_local may be each fiber's own.
std::mutex enrolled_mutex;
std::vector<Shard*> enrolled;

Shard* shard_of(FiberManager* manager) {
    const std::lock_guard<std::mutex> lock(enrolled_mutex);
    for (Shard* shard : enrolled)
        if (manager && shard->manager() == manager) return shard;
    return nullptr;
}

}  // namespace

namespace detail {

Shard& shard_of_this_thread(const char* what) {
    Shard* shard = shard_of(FiberManager::current());
    if (!shard)
        fatal("%s on a thread that is in no Cluster: only a cluster's fibers can wait for room "
              "(another thread uses try_post or try_send)", what);
    return *shard;
}

void send_wake(Shard& home, std::shared_ptr<SlotTicket> ticket) { home.send_wake(std::move(ticket)); }

void slot_wait(Shard& home, bool begins) { home.slot_wait(begins); }

bool post_job(Shard& shard, std::unique_ptr<Posted> call, bool wait) {
    return shard.post(std::move(call), wait);
}

}  // namespace detail

// The thread's body. The inbox opens here, once the manager exists (its
// Event is this thread's), and is released here at the end, before the
// Waiter goes: start() and every main wait for every thread to open it.
void Shard::run(const std::function<void(std::size_t)>& main, const char* backend, std::latch& ready,
                std::latch& returned) {
    std::optional<FiberManager> manager;
    std::optional<Waiter> waiter;
    try {
        manager.emplace();
        waiter.emplace(backend);
        inbox_.open();
    } catch (...) {
        error = std::current_exception();
        ready.count_down();
        returned.count_down();
        return;
    }
    manager_ = &*manager;
    main_ = manager->running();
    {
        const std::lock_guard<std::mutex> lock(enrolled_mutex);
        enrolled.push_back(this);
    }
    // No main runs before every inbox is open: a post from it finds its thread there.
    ready.arrive_and_wait();
    Fiber dispatcher({.name = "cluster dispatcher"}, [this] { dispatch(); });
    try {
        main(index);
    } catch (...) {
        error = std::current_exception();
        cluster_.stop();  // join() rethrows it
    }
    main_done_ = true;
    returned.count_down();
    inbox_.nudge();
    dispatcher.join();
    inbox_.release();
    const std::lock_guard<std::mutex> lock(enrolled_mutex);
    std::erase(enrolled, this);
}

// The thread has ended (or not begun) when the post fails: the slot goes back.
// A post that throws (no memory for the queue) gives it back too.
bool Shard::post(std::unique_ptr<detail::Posted> call, bool wait) {
    if (wait ? !slots_.take("Cluster::post") : !slots_.try_take()) return false;
    bool queued = false;
    try {
        queued = inbox_.post(Message{std::move(call), nullptr});
    } catch (...) {
        slots_.give_back();
        throw;
    }
    if (!queued) slots_.give_back();
    return queued;
}

// The ticket's fiber is this thread's, and waits: the inbox is open (a thread
// does not end while its fibers wait for slots, see dispatch()).
void Shard::send_wake(std::shared_ptr<SlotTicket> ticket) {
    inbox_.post(Message{nullptr, std::move(ticket)});
}

// For good. A stop asked for before the thread is set up is found by its
// first look; one asked for after it has ended changes nothing.
void Shard::request_stop() {
    stop_requested_.store(true);
    inbox_.nudge();
}

// The last wait for a slot that ends lets a stopping thread end: tell the
// dispatcher to look again.
void Shard::slot_wait(bool begins) {
    if (begins) {
        ++slot_waits_;
        return;
    }
    if (--slot_waits_ == 0) inbox_.nudge();
}

// The dispatcher: wakes the fibers whose tickets came home, starts a fiber
// for each posted call, and waits on the inbox only when it found nothing.
// It closes the inbox, ending the thread, once a stop was asked for, main has
// returned, every posted fiber has ended and no fiber of the thread waits for
// a slot anywhere (its wake would come here); the senders still waiting for
// room here are told (take() returns false). It is shielded from cancels
// (lesson 6): only this ending ends it.
void Shard::dispatch() {
    const CancelShield until_the_thread_ends;
    std::deque<Message> messages;
    for (;;) {
        inbox_.take_all(messages);
        const bool stop = stop_requested_.load();
        if (messages.empty() && stop && main_done_ && running_.empty() && slot_waits_ == 0 &&
            inbox_.close_if_empty())
            break;
        const bool stop_news = stop && !stopping_;
        if (stop_news) begin_stop();
        bool started = false;
        for (Message& message : messages) {
            if (message.wake) manager_->wake(message.wake->waiter);
            if (!message.call) continue;
            // Each new fiber runs before the next is made: one that does not
            // block ends at once and hands its stack, still warm, to the next.
            start_posted(std::move(message.call));
            manager_->yield();
            started = true;
        }
        if (messages.empty() && !stop_news && !started) inbox_.wait();
        messages.clear();
    }
    slots_.close();
}

void Shard::begin_stop() {
    stopping_ = true;
    if (!main_done_) manager_->cancel(main_);
    for (Running* posted = running_.front(); posted; posted = running_.next(posted))
        manager_->cancel(posted->fiber);
}

void Shard::start_posted(std::unique_ptr<detail::Posted> call) {
    try {
        Fiber({.name = "posted"}, [this](std::unique_ptr<detail::Posted> c) { run_posted(std::move(c)); },
              std::move(call))
            .detach();
    } catch (const std::exception& failure) {
        // No stack for a fiber (see vm.max_map_count): the call is dropped, loudly.
        std::fprintf(stderr, "fib: cluster thread %zu dropped a posted call: %s\n", index, failure.what());
        slots_.give_back();
    }
}

// A posted fiber holds its slot until it ends, so a thread's posts bound its
// fibers too. One started after the stop runs cancelled: its waits return at once.
void Shard::run_posted(std::unique_ptr<detail::Posted> call) {
    Running self{manager_->running(), {}};
    running_.push_back(&self);
    if (stopping_) manager_->cancel(self.fiber);
    struct Leave {
        Shard& shard;
        Running& self;
        ~Leave() {
            shard.running_.remove(&self);
            shard.slots_.give_back();
            // Only a stopping thread's dispatcher waits for the last to end;
            // a nudge at every end would cost it a turn and a read each time.
            if (shard.stopping_ && shard.running_.empty()) shard.inbox_.nudge();
        }
    } leave{*this, self};
    call->run();
}

}  // namespace fib
