// shard.cpp — lesson 9: a thread of a Cluster: its body, its inbox, its dispatcher, its stop.
#include "fib/shard.hpp"

#include <cstdio>
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

bool post_job(Shard& shard, std::unique_ptr<Posted> call, bool wait) {
    return shard.post(std::move(call), wait);
}

}  // namespace detail

// The thread's body. The Event is made here, once the manager exists, and the
// shard opens its inbox only then: start() and every main wait for every
// thread to get here.
void Shard::run(const std::function<void(std::size_t)>& main, const char* backend, std::latch& ready,
                std::latch& returned) {
    std::optional<FiberManager> manager;
    std::optional<Waiter> waiter;
    try {
        manager.emplace();
        waiter.emplace(backend);
        arrived_.emplace();
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
    {
        const std::lock_guard<std::mutex> lock(mutex_);
        closed_ = false;
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
    arrived_->set();
    dispatcher.join();
    const std::lock_guard<std::mutex> lock(enrolled_mutex);
    std::erase(enrolled, this);
}

// Lesson 8's inbox: the Event is set only by the change that found the inbox
// empty; until the dispatcher has emptied it, it is set already.
template <typename Change>
void Shard::to_inbox(Change change) {
    bool first;
    {
        const std::lock_guard<std::mutex> lock(mutex_);
        if (closed_) return;
        first = calls_.empty() && wakes_.empty() && !stop_unseen_;
        change();
    }
    if (first) arrived_->set();
}

bool Shard::post(std::unique_ptr<detail::Posted> call, bool wait) {
    if (wait ? !slots_.take("Cluster::post") : !slots_.try_take()) return false;
    bool queued = false;
    to_inbox([&] {
        calls_.push_back(std::move(call));
        queued = true;
    });
    if (!queued) slots_.give_back();  // the thread has ended
    return queued;
}

void Shard::send_wake(std::shared_ptr<SlotTicket> ticket) {
    to_inbox([&] { wakes_.push_back(std::move(ticket)); });
}

// A stop asked for before the thread is set up is found by its first look.
void Shard::request_stop() {
    {
        const std::lock_guard<std::mutex> lock(mutex_);
        stop_requested_ = true;
    }
    to_inbox([&] { stop_unseen_ = true; });
}

// The dispatcher: wakes the fibers whose tickets came home, starts a fiber
// for each posted call, and waits on the Event only when it found nothing.
// It closes the inbox, ending the thread, once a stop was asked for, main has
// returned and every posted fiber has ended; the senders still waiting for
// room here are told (take() returns false).
void Shard::dispatch() {
    std::vector<std::unique_ptr<detail::Posted>> calls;
    std::vector<std::shared_ptr<SlotTicket>> wakes;
    for (;;) {
        bool stop;
        {
            const std::lock_guard<std::mutex> lock(mutex_);
            calls.swap(calls_);
            wakes.swap(wakes_);
            stop = stop_requested_;
            stop_unseen_ = false;
            if (calls.empty() && wakes.empty() && stop && main_done_ && running_.empty()) {
                closed_ = true;
                break;
            }
        }
        for (const std::shared_ptr<SlotTicket>& ticket : wakes)
            manager_->wake(ticket->waiter);
        const bool stop_news = stop && !stopping_;
        if (stop_news) begin_stop();
        // Each new fiber runs before the next is made: one that does not
        // block ends at once and hands its stack, still warm, to the next.
        for (std::unique_ptr<detail::Posted>& call : calls) {
            start_posted(std::move(call));
            manager_->yield();
        }
        if (calls.empty() && wakes.empty() && !stop_news) arrived_->wait();
        calls.clear();
        wakes.clear();
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
            if (shard.running_.empty()) shard.arrived_->set();
        }
    } leave{*this, self};
    call->run();
}

}  // namespace fib
