// sharded_chat.hpp — lesson 9: lesson 6's chat room on every thread of a Cluster, one room for all.
//
//   ChatCluster chat(cluster.size(), listen_on_every_thread(bind, port, cluster.size()), {});
//   cluster.start([&](std::size_t i) { chat.serve(i); });   // each thread: its members, its feed
//
// Each thread has the members its listener accepted, each in a fiber with a
// bounded outbox (lesson 6's ChatMember), and a feed: a Mailbox of lines from
// the other threads. A line a member says goes straight into the outboxes of
// its own thread's members, and into every other thread's feed, where that
// thread's relay fiber puts it into its members' outboxes:
//
//   thread 0: user 1 says "hi" --outbox--> user 3 (thread 0)
//                              \--feed 1--> relay on thread 1 --outbox--> user 2, user 4
//
// A feed is FIFO and one fiber sends a member's lines, so each member's
// lines reach every other member in the order they were said. Nothing is
// lost between threads: a full feed parks the sender (and so its client's
// reads), it does not drop. The only lines dropped are lesson 6's, for a
// reader too slow for its outbox, with the notice that says how many.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <latch>
#include <memory>
#include <string>
#include <vector>

#include "fib/mailbox.hpp"
#include "fib/timer_heap.hpp"
#include "fib/unique_fd.hpp"

struct ChatClusterOptions {
    bool quiet = false;                                              // no join/leave log
    fib::Clock::duration write_timeout = std::chrono::seconds(30);  // for each batch sent
    std::size_t feed_capacity = 1024;                                // lines queued per feed
};

class ChatCluster {
public:
    // One listener per thread (sharded.hpp's listen_on_every_thread).
    ChatCluster(std::size_t threads, std::vector<fib::UniqueFd> listeners,
                const ChatClusterOptions& options);
    ~ChatCluster();

    // Thread `index`'s main: its feed, its relay and its server, until the
    // fiber is cancelled (Cluster::stop); then every client is closed.
    void serve(std::size_t index);

    // Readable from any thread.
    std::uint64_t lines_said() const { return said_.load(std::memory_order_relaxed); }
    std::uint64_t lines_dropped() const { return dropped_.load(std::memory_order_relaxed); }
    std::uint64_t clients_served(std::size_t index) const;

private:
    class Room;
    class Server;
    friend class Server;

    // `line` to the feed of every thread but `from`; false if cancelled meanwhile.
    bool publish(std::size_t from, const std::string& line);

    ChatClusterOptions options_;
    std::vector<fib::UniqueFd> listeners_;
    // Each made on its own thread (so that its Event is that thread's), and
    // kept until the end: another thread may still send as this one stops.
    std::vector<std::unique_ptr<fib::Mailbox<std::string>>> feeds_;
    std::latch feeds_made_;  // every thread's feed exists
    std::unique_ptr<std::atomic<std::uint64_t>[]> served_;
    std::atomic<unsigned> last_number_{0};  // users are numbered across all threads
    std::atomic<std::size_t> members_{0};
    std::atomic<std::uint64_t> said_{0};
    std::atomic<std::uint64_t> dropped_{0};
};
