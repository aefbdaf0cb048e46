// main.cpp — lesson 9's demo: threads with a manager each, messages between them, one port.
//
// Three parts, each on a Cluster of two threads of its own:
//   1. post: a callable posted from outside runs as a fiber on thread 1, which
//      posts one back to thread 0;
//   2. Mailbox: 20,000 values sent to the other thread and back, in order,
//      through boxes of four; and a full box that parks its sender;
//   3. SO_REUSEPORT: an echo server on each thread, on one port, and 40
//      clients the kernel spreads over them; then the stop.
#include <array>
#include <cstdio>
#include <latch>
#include <optional>
#include <vector>

#include "../04-echo-server/load_connections.hpp"
#include "fib/cluster.hpp"
#include "fib/event.hpp"
#include "fib/mailbox.hpp"
#include "fib/reuse_port.hpp"
#include "shard_echo.hpp"
#include "sharded.hpp"

namespace {

void post_demo() {
    std::printf("1. post\n");
    fib::Cluster cluster({.threads = 2});
    cluster.start([](std::size_t) {});  // the threads only serve posts
    std::latch done(1);
    cluster.try_post(1, [&] {
        std::printf("   thread %zu: a fiber posted from the program's thread\n", fib::Cluster::this_thread_index());
        cluster.post(0, [&] {
            std::printf("   thread %zu: a fiber posted by thread 1\n", fib::Cluster::this_thread_index());
            done.count_down();
        });
    });
    done.wait();
}

constexpr long kValues = 20'000;

// What each thread makes for itself: a box to receive from, and an Event.
struct Inbox {
    fib::Mailbox<long> box{4};
    fib::Event go;
};

// Thread 0 sends 1..kValues to thread 1, which sends each back; both check
// the order. Then thread 0 fills thread 1's box while thread 1 waits for `go`.
void mailbox_demo() {
    std::printf("2. Mailbox\n");
    fib::Cluster cluster({.threads = 2});
    std::array<Inbox*, 2> inbox{};
    std::latch made(2);
    cluster.run([&](std::size_t index) {
        Inbox mine;  // made on the thread that receives from it
        inbox[index] = &mine;
        made.arrive_and_wait();
        Inbox& other = *inbox[1 - index];
        if (index == 1) {
            long in_order = 0;
            for (long v = 1; v <= kValues; ++v) {
                if (mine.box.receive() == v) ++in_order;
                other.box.send(v);
            }
            mine.go.wait();  // printed after thread 0's lines, which come before the go
            std::printf("   thread 1: received %ld of %ld in order, sent each back\n", in_order, kValues);
            while (mine.box.receive() != 0) {
            }
            return;
        }
        long in_order = 0;
        for (long v = 1; v <= kValues; ++v) {
            other.box.send(v);
            if (mine.box.receive() == v) ++in_order;
        }
        std::printf("   thread 0: %ld of %ld came back, each the one sent\n", in_order, kValues);
        int taken = 0;
        while (other.box.try_send(-1)) ++taken;
        std::printf("   thread 0: thread 1's box took %d values, then try_send() said it was full\n", taken);
        other.go.set();     // another thread's Event: an eventfd write
        other.box.send(0);  // parks until thread 1 has taken one
        std::printf("   thread 0: send() had room once thread 1 took from the box\n");
    });
}

// The program's own thread is the client: 40 connections, 4 rounds each.
void reuse_port_demo() {
    std::printf("3. SO_REUSEPORT\n");
    fib::Cluster cluster({.threads = 2});
    std::vector<fib::UniqueFd> listeners = listen_on_every_thread("127.0.0.1", 0, 2);
    const std::uint16_t port = fib::tcp::local_port(listeners[0].get());
    std::array<unsigned long long, 2> served{};
    cluster.start([&](std::size_t index) {
        ShardEchoServer server(std::move(listeners[index]), {});
        serve_until_stopped(server);
        served[index] = server.clients_served();
    });
    std::printf("   two threads listen on 127.0.0.1:%u\n", port);
    const Totals totals = run_load({.port = port, .conns = 40, .size = 64, .seconds = 0.2});
    std::printf("   40 clients: %s\n", totals.connect_errors + totals.failures + totals.mismatches == 0
                                           ? "every byte echoed, none wrong"
                                           : "FAILED");
    cluster.stop();
    cluster.join();
    std::printf("   connections served by thread 0: %llu, by thread 1: %llu\n", served[0], served[1]);
    std::printf("   stopped: each thread cancelled its server's fibers and ended\n");
}

}  // namespace

int main() {
    post_demo();
    mailbox_demo();
    reuse_port_demo();
    return 0;
}
