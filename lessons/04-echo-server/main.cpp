// main.cpp — lesson 4 demo: an echo server and three clients, all fibers of one thread.
//
// The server fiber runs EchoServer::serve() on a free port; three client
// fibers connect, send a few lines and check every byte of the echo; then
// main stops the server through a pipe, as a signal would, and prints the
// server's totals and how often the Waiter called poll().
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>

#include "echo_server.hpp"
#include "fib/fiber.hpp"
#include "fib/io.hpp"
#include "fib/tcp.hpp"
#include "fib/waiter.hpp"

namespace {

// One client: connect, then per message send it and read until the whole echo
// is back. Returns the number of messages echoed intact.
int run_client(int number, std::uint16_t port) {
    fib::UniqueFd socket = fib::tcp::connect("127.0.0.1", port);
    if (!socket) {
        std::printf("client %d: connect: %s\n", number, std::strerror(errno));
        return 0;
    }
    int intact = 0;
    for (int message = 1; message <= 2; ++message) {
        const std::string sent = "hello " + std::to_string(message) + " from client " +
                                 std::to_string(number);
        if (fib::io::send_all(socket.get(), sent.data(), sent.size()) < 0) break;
        std::string echoed(sent.size(), '\0');
        std::size_t have = 0;
        while (have < echoed.size()) {
            const ssize_t n = fib::io::read(socket.get(), echoed.data() + have, echoed.size() - have);
            if (n <= 0) break;
            have += static_cast<std::size_t>(n);
        }
        std::printf("client %d: sent \"%s\", got \"%s\"\n", number, sent.c_str(),
                    echoed.substr(0, have).c_str());
        intact += echoed == sent;
    }
    return intact;
}

}  // namespace

int main() {
    std::setvbuf(stdout, nullptr, _IOLBF, 0);  // keep stdout and stderr lines in order
    fib::FiberManager manager;
    fib::Waiter waiter;
    EchoServer server({.port = 0});
    int stop[2];
    if (::pipe2(stop, O_NONBLOCK | O_CLOEXEC) < 0) return 1;
    std::printf("main: echo server on 127.0.0.1:%u\n", server.port());

    fib::Fiber server_fiber({.name = "server"}, [&] { server.serve(stop[0]); });
    int intact[3] = {};
    fib::Fiber clients[3];
    for (int i = 0; i < 3; ++i)
        clients[i] = fib::Fiber({.name = "client"}, [&intact, &server, i] {
            intact[i] = run_client(i + 1, server.port());
        });
    for (fib::Fiber& client : clients) client.join();

    std::printf("main: clients done; stopping the server\n");
    [[maybe_unused]] ssize_t written = ::write(stop[1], "x", 1);
    server_fiber.join();
    ::close(stop[0]);
    ::close(stop[1]);

    const fib::WaiterStats stats = waiter.stats();
    std::printf("main: served %llu connections, echoed %llu bytes; %d of 6 echoes intact\n",
                static_cast<unsigned long long>(server.connections_served()),
                static_cast<unsigned long long>(server.bytes_echoed()),
                intact[0] + intact[1] + intact[2]);
    std::printf("main: the Waiter called poll() %llu times, %llu of them blocking\n",
                static_cast<unsigned long long>(stats.polls),
                static_cast<unsigned long long>(stats.blocking_polls));
    return intact[0] + intact[1] + intact[2] == 6 ? 0 : 1;
}
