// main.cpp — lesson 5 demo: the same echo traffic on each Waiter backend, poll and epoll; an
// Event set by another thread; then timers and wait_any (demo_timers.cpp) and the chat
// (demo_chat.cpp).
//
// One thread runs an echo server, 200 idle connections and 4 busy clients that
// each make 250 round trips. For each backend the demo prints how often the
// Waiter asked the kernel for ready fds, and how often it changed the kernel's
// interest set while connecting and then during the round trips. poll never
// changes a set (it passes all 400-odd fds on every call instead); epoll
// changes its set while connections are made, and not at all per round trip.
//
// Then a worker thread adds up numbers while fibers run; a fiber waiting on an
// Event wakes when the worker sets it, through the Waiter.
#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "../04-echo-server/echo_server.hpp"
#include "demo_parts.hpp"
#include "fib/condvar.hpp"
#include "fib/event.hpp"
#include "fib/fiber.hpp"
#include "fib/io.hpp"
#include "fib/tcp.hpp"
#include "fib/unique_fd.hpp"
#include "fib/waiter.hpp"

namespace {

constexpr int kIdle = 200;
constexpr int kBusy = 4;
constexpr int kRoundTrips = 250;

// One busy client: connects, waits for the go, then makes round trips of a
// 32-byte message. Returns how many came back intact.
int round_trips(std::uint16_t port, int& connected, fib::CondVar& go, const bool& started) {
    fib::UniqueFd socket = fib::tcp::connect("127.0.0.1", port);
    ++connected;
    go.wait([&] { return started; });
    const std::string message(32, 'm');
    std::string echo(message.size(), '\0');
    int intact = 0;
    for (int i = 0; i < kRoundTrips && socket; ++i) {
        if (fib::io::send_all(socket.get(), message.data(), message.size()) < 0) break;
        std::size_t have = 0;
        while (have < echo.size()) {
            const ssize_t n = fib::io::read(socket.get(), echo.data() + have, echo.size() - have);
            if (n <= 0) break;
            have += static_cast<std::size_t>(n);
        }
        intact += echo == message;
    }
    return intact;
}

bool run_on(const char* backend) {
    fib::FiberManager manager;
    fib::Waiter waiter(backend);
    EchoServer server({.port = 0, .quiet = true});
    int stop[2];
    if (::pipe2(stop, O_NONBLOCK | O_CLOEXEC) < 0) return false;
    fib::Fiber server_fiber({.name = "server"}, [&] { server.serve(stop[0]); });
    std::vector<fib::UniqueFd> idle;
    for (int i = 0; i < kIdle; ++i) idle.push_back(fib::tcp::connect("127.0.0.1", server.port()));
    int intact = 0, connected = 0;
    bool started = false;
    fib::CondVar go;
    std::vector<fib::Fiber> busy;
    for (int i = 0; i < kBusy; ++i)
        busy.emplace_back([&] { intact += round_trips(server.port(), connected, go, started); });
    while (connected < kBusy || server.open_connections() < kIdle + kBusy) fib::this_fiber::yield();
    const fib::WaiterStats connecting = waiter.stats();
    started = true;
    go.notify_all();
    for (fib::Fiber& client : busy) client.join();
    const fib::WaiterStats stats = waiter.stats();
    idle.clear();
    [[maybe_unused]] ssize_t written = ::write(stop[1], "x", 1);
    server_fiber.join();
    ::close(stop[0]);
    ::close(stop[1]);
    std::printf("%-5s: %d of %d round trips intact over %d connections (%d idle)\n", backend,
                intact, kBusy * kRoundTrips, kIdle + kBusy, kIdle);
    std::printf("       interest set changed %llu times while connecting, %llu times during the "
                "round trips; %llu calls to ask the kernel\n",
                static_cast<unsigned long long>(connecting.interest_changes),
                static_cast<unsigned long long>(stats.interest_changes - connecting.interest_changes),
                static_cast<unsigned long long>(stats.polls));
    return intact == kBusy * kRoundTrips;
}

}  // namespace

bool backends_demo() { return run_on("poll") && run_on("epoll"); }

// A worker thread computes; the fiber that needs the result waits on an Event,
// while another fiber goes on with its own work.
bool event_demo() {
    fib::FiberManager manager;
    fib::Waiter waiter;
    fib::Event done;
    std::atomic<long long> sum{0};
    std::thread worker([&] {
        long long total = 0;
        for (long long i = 1; i <= 1'000'000; ++i) total += i;
        sum.store(total, std::memory_order_release);
        done.set();  // the only thing the worker does to the fiber world
    });
    fib::Fiber consumer({.name = "consumer"}, [&] {
        done.wait();
        std::printf("event: the consumer fiber woke with the worker thread's sum, %lld\n",
                    sum.load(std::memory_order_acquire));
    });
    int turns = 0;
    fib::Fiber busy({.name = "busy"}, [&] {
        for (; turns < 1000; ++turns) fib::this_fiber::yield();
    });
    busy.join();
    consumer.join();
    worker.join();
    std::printf("event: meanwhile another fiber took its %d turns\n", turns);
    return sum == 500'000'500'000LL;
}

int main() {
    const bool backends_ok = backends_demo();
    const bool event_ok = event_demo();
    const bool timers_ok = timers_demo();
    const bool chat_ok = chat_demo();
    return backends_ok && event_ok && timers_ok && chat_ok ? 0 : 1;
}
