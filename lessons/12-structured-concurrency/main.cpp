// main.cpp — lesson 12 demo: structured concurrency, and the critics of fibers measured.
//
// Part 1 opens a scope with three children; one fails, and the scope cancels
// the other two wherever they wait, then rethrows the failure. Part 2 nests
// deadlines and closes a cancelled connection politely under a shield. Part 3
// is a server as a scope of its connections, stopped by one cancel. Part 4
// lets the stall detector name a loop that never yields, while it runs. Then
// two critics of fibers, measured (critics.hpp): a system call that blocks the
// thread (pinning), and a loop that never yields (starvation), stall every
// other fiber of the thread.
#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <stdexcept>

#include "fib/condvar.hpp"
#include "fib/io.hpp"
#include "fib/scope.hpp"
#include "fib/stall_detector.hpp"
#include "fib/tcp.hpp"
#include "critics.hpp"
#include "fib/waiter.hpp"
#include "scoped_server.hpp"

namespace {

using namespace std::chrono_literals;

void part1_first_exception() {
    std::printf("Part 1: the first exception cancels the siblings, and scope() rethrows it\n");
    int pipe_fds[2];
    if (::pipe2(pipe_fds, O_NONBLOCK | O_CLOEXEC) < 0) return;
    const fib::UniqueFd read_end(pipe_fds[0]), write_end(pipe_fds[1]);
    fib::CondVar never_notified;
    try {
        fib::scope({.name = "part 1"}, [&](fib::Scope& scope) {
            scope.spawn({.name = "reader"}, [&] {
                char byte;
                const ssize_t got = fib::io::read(read_end.get(), &byte, 1);
                std::printf("  reader: read returned %zd (%s)\n", got, std::strerror(errno));
            });
            scope.spawn({.name = "sleeper"}, [] {
                const bool slept = fib::sleep_for(1h);
                std::printf("  sleeper: sleep_for(1h) returned %s\n", slept ? "true" : "false");
            });
            scope.spawn({.name = "failing"}, [] {
                fib::this_fiber::yield();  // the others are parked by now
                std::printf("  failing: throws\n");
                throw std::runtime_error("the disk is full");
            });
        });
    } catch (const std::exception& error) {
        std::printf("  scope() rethrew: %s\n", error.what());
    }
}

void part2_deadlines() {
    std::printf("Part 2: deadlines nest; a shielded clean-up runs when cancelled\n");
    const bool outer = fib::with_timeout(1h, [] {
        const bool inner = fib::with_timeout(20ms, [] { fib::sleep_for(1h); });
        std::printf("  inner with_timeout(20ms) in time: %s\n", inner ? "yes" : "no");
    });
    std::printf("  outer with_timeout(1h) in time: %s\n", outer ? "yes" : "no");
    const bool later = fib::with_timeout(20ms, [] {
        const bool inner = fib::with_timeout(1h, [] { fib::sleep_for(1h); });
        std::printf("  inner with_timeout(1h) inside a 20 ms one, in time: %s\n", inner ? "yes" : "no");
    });
    std::printf("  outer with_timeout(20ms) in time: %s\n", later ? "yes" : "no");
    fib::Fiber client({.name = "client"}, [] {
        fib::this_fiber::yield();  // cancelled meanwhile
        std::printf("  client: cancelled: %s; a plain sleep_for(1ms) returns %s\n",
                    fib::this_fiber::cancelled() ? "yes" : "no", fib::sleep_for(1ms) ? "true" : "false");
        const bool polite = fib::shielded(100ms, [] {
            std::printf("  client: shielded clean-up: sleep_for(1ms) returns %s\n",
                        fib::sleep_for(1ms) ? "true" : "false");
        });
        std::printf("  client: clean-up done in time: %s\n", polite ? "yes" : "no");
    });
    client.cancel();
    client.join();
}

class Echo : public ScopedServer {
public:
    Echo() : ScopedServer("demo", "127.0.0.1", 0) {}

protected:
    void serve_client(int socket) override {
        char buffer[256];
        ssize_t got;
        while ((got = fib::io::read(socket, buffer, sizeof buffer)) > 0)
            if (fib::io::write_all(socket, buffer, static_cast<std::size_t>(got)) < 0) return;
    }
};

void part3_server() {
    std::printf("Part 3: a server is a scope of its connections; stop = cancel the scope\n");
    Echo server;
    int stop_pipe[2];
    if (::pipe2(stop_pipe, O_NONBLOCK | O_CLOEXEC) < 0) return;
    const fib::UniqueFd stop_read(stop_pipe[0]), stop_write(stop_pipe[1]);
    fib::Fiber serving({.name = "server"}, [&] { server.serve(stop_read.get()); });
    fib::UniqueFd clients[2] = {fib::tcp::connect("127.0.0.1", server.port()),
                                fib::tcp::connect("127.0.0.1", server.port())};
    for (fib::UniqueFd& client : clients) {
        char echo[6] = {};
        fib::io::write_all(client.get(), "hello", 5);
        fib::io::read(client.get(), echo, 5);
        std::printf("  a client got back \"%s\"\n", echo);
    }
    std::printf("  %zu clients connected; stopping\n", server.clients_connected());
    [[maybe_unused]] const ssize_t written = ::write(stop_write.get(), "x", 1);
    serving.join();
    char byte;
    std::printf("  serve() returned; %zu connected; a client's read now returns %zd (EOF)\n",
                server.clients_connected(), fib::io::read(clients[0].get(), &byte, 1));
}

// The report goes to stderr, with a backtrace of the loop (addr2line names
// its lines); the busy fiber watches the count to know when to stop.
void part4_stall(fib::FiberManager& manager) {
    std::printf("Part 4: the stall detector names a fiber that runs 20 ms of CPU without a switch\n");
    std::fflush(stdout);
    fib::StallDetector detector(manager, 20ms);
    fib::Fiber busy({.name = "busy"}, [&] {
        fib::sleep_for(1ms);
        const auto give_up = std::chrono::steady_clock::now() + 2s;
        while (detector.reports() == 0 && std::chrono::steady_clock::now() < give_up) {
        }
    });
    busy.join();
    std::printf("  reports: %llu\n", static_cast<unsigned long long>(detector.reports()));
}

}  // namespace

int main() {
    fib::FiberManager manager;
    fib::Waiter waiter;
    part1_first_exception();
    part2_deadlines();
    part3_server();
    part4_stall(manager);
    critics::demo_pinning();
    critics::demo_starvation();
    return 0;
}
