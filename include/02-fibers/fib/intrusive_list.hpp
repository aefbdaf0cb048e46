// intrusive_list.hpp — lesson 2: a doubly linked list whose links live inside the items.
//
// The ready queue must push and pop on every yield without allocating. So each item carries its own ListLink, and the
// list only strings items together: push_back, pop_front and remove are O(1)
// pointer updates. An item can be in one list per link it has.
#pragma once

#include <cstddef>

namespace fib {

template <class T>
struct ListLink {
    T* prev = nullptr;
    T* next = nullptr;
};

// `Link` names the member of T that this list threads through, e.g.
// IntrusiveList<FiberRecord, &FiberRecord::queue_link>.
template <class T, ListLink<T> T::*Link>
class IntrusiveList {
public:
    bool empty() const { return head_ == nullptr; }
    std::size_t size() const { return size_; }
    T* front() const { return head_; }
    static T* next(const T* item) { return (item->*Link).next; }

    void push_back(T* item) {
        (item->*Link).prev = tail_;
        (item->*Link).next = nullptr;
        if (tail_)
            (tail_->*Link).next = item;
        else
            head_ = item;
        tail_ = item;
        ++size_;
    }

    // The oldest item, unlinked; nullptr when the list is empty.
    T* pop_front() {
        T* item = head_;
        if (item) remove(item);
        return item;
    }

    // Unlinks an item that is in this list.
    void remove(T* item) {
        ListLink<T>& link = item->*Link;
        if (link.prev)
            (link.prev->*Link).next = link.next;
        else
            head_ = link.next;
        if (link.next)
            (link.next->*Link).prev = link.prev;
        else
            tail_ = link.prev;
        link = ListLink<T>{};
        --size_;
    }

private:
    T* head_ = nullptr;
    T* tail_ = nullptr;
    std::size_t size_ = 0;
};

}  // namespace fib
