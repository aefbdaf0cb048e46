// slots.cpp — lesson 9: taking a slot, parking for one, and handing one back across threads.
#include "fib/slots.hpp"

#include <algorithm>
#include <utility>

#include "fib/cancel.hpp"
#include "fib/fatal.hpp"
#include "fib/fiber_manager.hpp"

namespace fib {

Slots::Slots(std::size_t capacity) : capacity_(std::max<std::size_t>(capacity, 1)) {}

Slots::~Slots() {
    if (!waiting_.empty())
        fatal("Slots destroyed while %zu fiber(s) waited for a slot; the first is on cluster "
              "thread %p", waiting_.size(), static_cast<void*>(waiting_.front()->home));
}

bool Slots::try_take() {
    const std::lock_guard<std::mutex> lock(mutex_);
    if (closed_ || used_ == capacity_) return false;
    ++used_;
    return true;
}

// The ticket is on the queue before the mutex is let go: a give_back() right
// after finds it there. Woken, by its ticket or by a cancel, the fiber reads
// `granted` under the mutex and takes its ticket off the queue; a ticket left
// there would be handed the next free slot, for a fiber that no longer waits.
// A cancel that comes after the grant is too late: the fiber has its slot.
bool Slots::take(const char* what) {
    if (try_take()) return true;
    Shard& home = detail::shard_of_this_thread(what);
    FiberManager& manager = FiberManager::of_this_thread(what);
    const ParkToken me = manager.begin_wait();
    auto ticket = std::make_shared<SlotTicket>(SlotTicket{&home, me});
    if (this_fiber::cancelled()) return false;
    {
        const std::lock_guard<std::mutex> lock(mutex_);
        if (closed_) return false;
        if (used_ < capacity_) {
            ++used_;
            return true;
        }
        waiting_.push_back(ticket);
    }
    detail::slot_wait(home, true);  // the wake comes home: the thread must be there
    {
        const CancelScope cancellable(me);
        for (;;) {
            manager.park(me, WaitSite{what, nullptr, this});
            const std::lock_guard<std::mutex> lock(mutex_);
            if (ticket->granted || closed_ || cancellable.woke_it()) break;
        }
    }
    ticket->waiter = ParkToken{};  // a wake still on its way finds nobody to wake
    bool granted;
    {
        const std::lock_guard<std::mutex> lock(mutex_);
        std::erase(waiting_, ticket);
        granted = ticket->granted;
    }
    detail::slot_wait(home, false);
    return granted;
}

// The slot goes straight to the first ticket, still counted as used; the
// wake is sent after the mutex is let go.
void Slots::give_back() {
    std::shared_ptr<SlotTicket> next;
    {
        const std::lock_guard<std::mutex> lock(mutex_);
        if (waiting_.empty()) {
            if (used_ > 0) --used_;
            return;
        }
        next = std::move(waiting_.front());
        waiting_.pop_front();
        next->granted = true;
    }
    Shard& home = *next->home;  // before the move below
    detail::send_wake(home, std::move(next));
}

void Slots::close() {
    std::deque<std::shared_ptr<SlotTicket>> woken;
    {
        const std::lock_guard<std::mutex> lock(mutex_);
        closed_ = true;
        woken.swap(waiting_);
    }
    for (std::shared_ptr<SlotTicket>& ticket : woken) {
        Shard& home = *ticket->home;
        detail::send_wake(home, std::move(ticket));
    }
}

std::size_t Slots::in_use() {
    const std::lock_guard<std::mutex> lock(mutex_);
    return used_;
}

}  // namespace fib
