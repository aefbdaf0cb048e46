// L09_cluster_bench.cpp — make bench, lesson 9: what a message between two managers costs,
// next to a mutex + condition-variable queue between two plain threads in the same run.
//
//   post_roundtrip       a fiber on thread 0 posts a callable to thread 1, which posts one
//                        back that wakes the fiber: ns per round trip. Each post is an inbox
//                        push, an eventfd write when the inbox was empty, the other thread's
//                        epoll_wait returning, and a new fiber there
//   mailbox_roundtrip    the same through two Mailboxes of one value: no fiber made per message
//   queue_roundtrip      two plain threads, each blocked on its own mutex + condvar queue;
//                        timed turn about with post_roundtrip
//   eventfd_roundtrip    two plain threads, each asleep in epoll_wait on its own eventfd,
//                        writing the other's: the wake-up a post is built on, alone (a
//                        write, an epoll_wait and a read each way); timed turn about with a
//                        second queue_roundtrip
//   post_throughput      callables posted from thread 0 to thread 1 (each adds 1 to a count
//                        there), as fast as they go, bounded by the post capacity: per second
//   mailbox_throughput   values sent from thread 0 to a fiber on thread 1, box of 1,024
//   queue_throughput     values between two plain threads through a bounded queue of 1,024
//                        (the producer waits on a condvar while it is full)
//   cluster_idle_cpu     CPU time of the whole process over 200 ms with two idle cluster
//                        threads: each asleep in epoll_wait

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <latch>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <thread>
#include <vector>

#include "bench.hpp"
#include "fib/cluster.hpp"
#include "fib/event.hpp"
#include "fib/mailbox.hpp"

namespace bench {
namespace {

constexpr std::size_t kCapacity = 1024;

// What plain threads use: a deque under a mutex, a condvar for each way to wait.
template <typename T>
class BlockingQueue {
public:
    explicit BlockingQueue(std::size_t capacity) : capacity_(capacity) {}
    void push(T value) {
        std::unique_lock<std::mutex> lock(mutex_);
        not_full_.wait(lock, [&] { return values_.size() < capacity_; });
        values_.push_back(std::move(value));
        not_empty_.notify_one();
    }
    T pop() {
        std::unique_lock<std::mutex> lock(mutex_);
        not_empty_.wait(lock, [&] { return !values_.empty(); });
        T value = std::move(values_.front());
        values_.pop_front();
        not_full_.notify_one();
        return value;
    }

private:
    const std::size_t capacity_;
    std::mutex mutex_;
    std::condition_variable not_empty_, not_full_;
    std::deque<T> values_;
};

// queue_roundtrip's two plain threads: a partner that sends back each value it receives, and
// a timed run of `count` round trips to it. Timed turn about with each row it is compared to.
class QueuePartner {
public:
    QueuePartner() : partner_([this] {
        for (long value; (value = to_.pop()) >= 0;) from_.push(value);
    }) {}
    ~QueuePartner() {
        to_.push(-1);
        partner_.join();
    }
    void round_trips(long count) {
        for (long i = 0; i < count; ++i) {
            to_.push(i);
            from_.pop();
        }
    }

private:
    BlockingQueue<long> to_{1}, from_{1};
    std::thread partner_;  // last: it starts once the queues exist
};

// A timed run that does `work(count)` on thread 0 of a two-thread cluster, from the bench's
// thread.
template <typename Work>
auto run_on_thread_0(fib::Cluster& cluster, Work work) {
    return [&cluster, work](long count) {
        std::latch done(1);
        cluster.try_post(0, [&] {
            work(count);
            done.count_down();
        });
        done.wait();
    };
}

template <typename Work>
Summary on_thread_0(fib::Cluster& cluster, long operations, Work work) {
    return ns_per_op(operations, run_on_thread_0(cluster, work));
}

// post_roundtrip and queue_roundtrip, timed turn about: the ratio the lesson's target is
// set on, with the machine's drift falling on both alike.
std::pair<Summary, Summary> post_and_queue_round_trips(long operations) {
    fib::Cluster cluster({.threads = 2});
    cluster.start([](std::size_t) {});
    QueuePartner queue;
    auto posts = run_on_thread_0(cluster, [&cluster](long count) {
        fib::Event back;  // thread 0's: the callable posted back sets it without a system call
        for (long i = 0; i < count; ++i) {
            cluster.post(1, [&] { cluster.post(0, [&] { back.set(); }); });
            back.wait();
        }
    });
    return ns_per_op_turn_about(operations, posts, [&](long count) { queue.round_trips(count); });
}

// One thread's way to be woken as a cluster thread is, without the cluster: an eventfd it
// sleeps on in epoll_wait, then reads.
class EventfdWake {
public:
    EventfdWake() : eventfd_(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)), epoll_(::epoll_create1(EPOLL_CLOEXEC)) {
        epoll_event event{};
        event.events = EPOLLIN;
        if (eventfd_ < 0 || epoll_ < 0 || ::epoll_ctl(epoll_, EPOLL_CTL_ADD, eventfd_, &event) < 0)
            throw std::runtime_error("eventfd_roundtrip: no eventfd or epoll");
    }
    ~EventfdWake() {
        ::close(epoll_);
        ::close(eventfd_);
    }
    void wake() {
        const std::uint64_t one = 1;
        if (::write(eventfd_, &one, sizeof one) != sizeof one) throw std::runtime_error("eventfd write");
    }
    void sleep() {
        epoll_event event;
        while (::epoll_wait(epoll_, &event, 1, -1) != 1) {
        }
        std::uint64_t count;
        if (::read(eventfd_, &count, sizeof count) != sizeof count) throw std::runtime_error("eventfd read");
    }

private:
    int eventfd_, epoll_;
};

// eventfd_roundtrip and queue_roundtrip, timed turn about.
std::pair<Summary, Summary> eventfd_and_queue_round_trips(long operations) {
    EventfdWake to_partner, from_partner;
    std::atomic<bool> done{false};
    std::thread eventfd_partner([&] {
        for (;;) {
            to_partner.sleep();
            if (done.load()) return;
            from_partner.wake();
        }
    });
    QueuePartner queue;
    auto eventfds = [&](long count) {
        for (long i = 0; i < count; ++i) {
            to_partner.wake();
            from_partner.sleep();
        }
    };
    const auto both =
        ns_per_op_turn_about(operations, eventfds, [&](long count) { queue.round_trips(count); });
    done.store(true);
    to_partner.wake();
    eventfd_partner.join();
    return both;
}

// Each thread's box, made on it; thread 1 echoes what it receives until it gets -1.
Summary mailbox_roundtrip(long operations) {
    std::vector<std::unique_ptr<fib::Mailbox<long>>> box(2);  // outlives the cluster's threads
    fib::Cluster cluster({.threads = 2});
    std::latch made(2);
    cluster.start([&](std::size_t index) {
        box[index] = std::make_unique<fib::Mailbox<long>>(1);
        made.arrive_and_wait();
        if (index == 1)
            while (std::optional<long> value = box[1]->receive())
                if (*value < 0 || !box[0]->send(*value)) break;
    });
    const Summary summary = on_thread_0(cluster, operations, [&](long count) {
        for (long i = 0; i < count; ++i) {
            box[1]->send(i);
            box[0]->receive();
        }
    });
    cluster.try_post(0, [&] { box[1]->send(-1); });
    return summary;
}

Summary post_throughput(long operations) {
    fib::Cluster cluster({.threads = 2, .post_capacity = kCapacity});
    cluster.start([](std::size_t) {});
    long received = 0;  // thread 1's
    return on_thread_0(cluster, operations, [&](long count) {
        fib::Event all_in;
        for (long i = 0; i < count; ++i) cluster.post(1, [&] { ++received; });
        cluster.post(1, [&] { cluster.post(0, [&] { all_in.set(); }); });  // after the others
        all_in.wait();
    });
}

Summary mailbox_throughput(long operations) {
    std::vector<std::unique_ptr<fib::Mailbox<long>>> box(2);  // outlives the cluster's threads
    fib::Cluster cluster({.threads = 2});
    std::latch made(2);
    cluster.start([&](std::size_t index) {
        box[index] = std::make_unique<fib::Mailbox<long>>(kCapacity);
        made.arrive_and_wait();
        if (index == 1)
            while (std::optional<long> value = box[1]->receive()) {
                if (*value == -2) box[0]->send(0);  // the end of a run
                if (*value == -1) break;
            }
    });
    const Summary summary = on_thread_0(cluster, operations, [&](long count) {
        for (long i = 0; i < count; ++i) box[1]->send(i);
        box[1]->send(-2);
        box[0]->receive();
    });
    cluster.try_post(0, [&] { box[1]->send(-1); });
    return summary;
}

Summary queue_throughput(long operations) {
    BlockingQueue<long> queue(kCapacity), back(1);
    std::thread consumer([&] {
        for (long value; (value = queue.pop()) != -1;)
            if (value == -2) back.push(0);
    });
    const Summary summary = ns_per_op(operations, [&](long count) {
        for (long i = 0; i < count; ++i) queue.push(i);
        queue.push(-2);
        back.pop();
    });
    queue.push(-1);
    consumer.join();
    return summary;
}

Summary idle_cpu() {
    fib::Cluster cluster({.threads = 2});
    cluster.start([](std::size_t) {});
    std::vector<double> values;
    for (int i = 0; i < 5; ++i) {
        const double before = process_cpu_us();
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
        values.push_back(process_cpu_us() - before);
    }
    return summarize(values);
}

Summary per_second(Summary ns) { return {1e9 / ns.median, 1e9 / ns.max, 1e9 / ns.min}; }

void cluster_costs(std::vector<Figure>& figures) {
    const auto [posts, queues] = post_and_queue_round_trips(100'000);
    Figure queue_rt{"queue_roundtrip", queues};
    queue_rt.compared = "two plain threads, mutex + condvar queues";
    Figure post_rt{"post_roundtrip", posts};
    compare(post_rt, "queue_roundtrip (turn about)", "thread_queue_ratio", posts.median / queues.median);
    const auto [eventfds, queues_again] = eventfd_and_queue_round_trips(100'000);
    Figure eventfd_rt{"eventfd_roundtrip", eventfds};
    compare(eventfd_rt, "a second queue_roundtrip (turn about)", "thread_queue_ratio",
            eventfds.median / queues_again.median);
    Figure mailbox_rt{"mailbox_roundtrip", mailbox_roundtrip(100'000)};
    compare(mailbox_rt, "queue_roundtrip", "thread_queue_ratio", mailbox_rt.value.median / queue_rt.value.median);

    const Summary queue_ns = queue_throughput(2'000'000);
    Figure queue_tp{"queue_throughput", per_second(queue_ns), "per_s"};
    queue_tp.compared = "two plain threads, a bounded queue of 1024";
    const Summary post_ns = post_throughput(1'000'000);
    Figure post_tp{"post_throughput", per_second(post_ns), "per_s"};
    compare(post_tp, "queue_throughput", "thread_queue_ratio", queue_ns.median / post_ns.median);
    const Summary mailbox_ns = mailbox_throughput(2'000'000);
    Figure mailbox_tp{"mailbox_throughput", per_second(mailbox_ns), "per_s"};
    compare(mailbox_tp, "queue_throughput", "thread_queue_ratio", queue_ns.median / mailbox_ns.median);

    Figure idle{"cluster_idle_cpu", idle_cpu(), "us"};
    idle.compared = "CPU time over 200 ms, two idle cluster threads";
    idle.repetitions = 5;
    for (const Figure& figure : {queue_rt, post_rt, eventfd_rt, mailbox_rt, queue_tp, post_tp, mailbox_tp, idle})
        figures.push_back(figure);
}

[[maybe_unused]] const bool registered[] = {
    add(Section{"cluster", 9, false, cluster_costs}),
    add(Target{"post_roundtrip / queue_roundtrip (<= 1)", "post_roundtrip", "queue_roundtrip", false, 1}),
};

}  // namespace
}  // namespace bench
