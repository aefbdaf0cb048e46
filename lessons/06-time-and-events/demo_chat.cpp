// demo_chat.cpp — lesson 6 demo, part 3: three clients chat through the chat server, in one thread.
//
// The ChatServer and three client fibers share one FiberManager and Waiter.
// The clients join one after the other, then each says one line, in turn;
// each prints every line it receives. Each waits for the lines it expects
// before the next client speaks, so the output is the same on every run.
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include "chat_server.hpp"
#include "demo_parts.hpp"
#include "fib/fiber.hpp"
#include "fib/io.hpp"
#include "fib/tcp.hpp"
#include "fib/waiter.hpp"

namespace {

// One chat client: its socket and what it has received but not yet printed.
struct Client {
    const char* who;
    fib::UniqueFd socket;
    std::string pending;

    // Reads until `count` whole lines have come, printing each.
    bool receive_lines(int count) {
        char buffer[512];
        while (count > 0) {
            const std::size_t end = pending.find('\n');
            if (end != std::string::npos) {
                std::printf("chat: %-5s got  \"%s\"\n", who, pending.substr(0, end).c_str());
                pending.erase(0, end + 1);
                --count;
                continue;
            }
            const ssize_t n = fib::io::read(socket.get(), buffer, sizeof buffer);
            if (n <= 0) return false;
            pending.append(buffer, static_cast<std::size_t>(n));
        }
        return true;
    }
    bool say(std::string_view line) {
        std::printf("chat: %-5s says \"%.*s\"\n", who, static_cast<int>(line.size()), line.data());
        const std::string with_newline = std::string(line) + "\n";
        return fib::io::send_all(socket.get(), with_newline.data(), with_newline.size()) >= 0;
    }
};

}  // namespace

bool chat_demo() {
    fib::FiberManager manager;
    fib::Waiter waiter;
    ChatServer server({.port = 0, .quiet = true});
    int stop[2];
    if (::pipe2(stop, O_NONBLOCK | O_CLOEXEC) < 0) return false;
    fib::Fiber server_fiber({.name = "server"}, [&] { server.serve(stop[0]); });

    bool ok = true;
    std::vector<Client> clients;
    for (const char* who : {"ann", "bob", "cy"}) {
        clients.push_back({who, fib::tcp::connect("127.0.0.1", server.port()), {}});
        ok = ok && clients.back().receive_lines(1);  // "*** you are user N; N in the room"
        for (std::size_t i = 0; i + 1 < clients.size(); ++i)
            ok = ok && clients[i].receive_lines(1);  // "*** user N joined"
    }
    const char* lines[] = {"hello, room", "hi ann", "bye all"};
    for (std::size_t speaker = 0; speaker < clients.size(); ++speaker) {
        ok = ok && clients[speaker].say(lines[speaker]);
        for (std::size_t i = 0; i < clients.size(); ++i)
            if (i != speaker) ok = ok && clients[i].receive_lines(1);
    }
    clients.clear();
    [[maybe_unused]] ssize_t written = ::write(stop[1], "x", 1);
    server_fiber.join();
    ::close(stop[0]);
    ::close(stop[1]);
    std::printf("chat: %llu lines relayed to %llu clients, %llu dropped\n",
                static_cast<unsigned long long>(server.lines_relayed()),
                static_cast<unsigned long long>(server.clients_served()),
                static_cast<unsigned long long>(server.lines_dropped()));
    return ok && server.lines_relayed() == 3 && server.lines_dropped() == 0;
}
