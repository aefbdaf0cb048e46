// main.cpp — lesson 5 demo: the same echo traffic on each Waiter backend, poll and epoll.
//
// One thread runs an echo server, 200 idle connections and 4 busy clients that
// each make 250 round trips. For each backend the demo prints how often the
// Waiter asked the kernel for ready fds, and how often it changed the kernel's
// interest set while connecting and then during the round trips. poll never
// changes a set (it passes all 400-odd fds on every call instead); epoll
// changes its set while connections are made, and not at all per round trip.
#include <fcntl.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "../04-echo-server/echo_server.hpp"
#include "fib/condvar.hpp"
#include "fib/epoll_poller.hpp"
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
    const std::uint64_t changes_connecting = fib::epoll_ctl_calls(waiter.poller());
    started = true;
    go.notify_all();
    for (fib::Fiber& client : busy) client.join();
    const fib::WaiterStats stats = waiter.stats();
    const std::uint64_t changes = fib::epoll_ctl_calls(waiter.poller());
    idle.clear();
    [[maybe_unused]] ssize_t written = ::write(stop[1], "x", 1);
    server_fiber.join();
    ::close(stop[0]);
    ::close(stop[1]);
    std::printf("%-5s: %d of %d round trips intact over %d connections (%d idle)\n", backend,
                intact, kBusy * kRoundTrips, kIdle + kBusy, kIdle);
    std::printf("       interest set changed %llu times while connecting, %llu times during the "
                "round trips; %llu calls to ask the kernel\n",
                static_cast<unsigned long long>(changes_connecting),
                static_cast<unsigned long long>(changes - changes_connecting),
                static_cast<unsigned long long>(stats.polls));
    return intact == kBusy * kRoundTrips;
}

}  // namespace

int main() { return run_on("poll") && run_on("epoll") ? 0 : 1; }
