// L12_memory_bench.cpp — make bench, lesson 12: how much of its 64 KiB stack a server's fiber really
// uses, next to a coroutine frame and a Go-style growable stack, measured in the same run.
//
//   echo_stack_high_water   lesson 4's EchoServer, on a thread of its own inside a
//                           StackHighWaterScope, its echo() wrapped to record its own
//                           fiber's stack_high_water() as it returns; 50 clients over
//                           loopback each echo 1, 64, 1,024 and 16,384 bytes, then
//                           close. Per repetition: the deepest of the 50. The first
//                           repetition's is deeper (its max): the first call of each libc
//                           function goes through the dynamic linker's lazy binding,
//                           which saves the vector registers on the fiber's stack
//                           (LD_BIND_NOW=1 makes every repetition the same)
//   chat_stack_high_water   the same for lesson 6's ChatServer (serve_client wrapped):
//                           20 members each say 5 lines and read every other's
//   echo_stack_resident     the echo fibers' stack pages resident as echo() returns
//                           (mincore): the RSS the stack of an idle connection costs,
//                           median of the 50, whole pages
//   stack_reserved          Stack::kDefaultSize, what every fiber reserves
//   co_echo_frame_bytes     lesson 10's CoEchoServer with 500 idle connections: heap
//                           growth per connection (mallinfo2), i.e. its serve_client
//                           and echo tasks' frames as Task allocates them (operator new)
//   go_stack_start          a goroutine's first stack, 2 KiB since Go 1.4 (8 KiB
//                           before): a constant, with how many times a goroutine
//                           would copy its stack (doubling) to reach echo's depth
//   spawn_join_measured     lesson 2's spawn_join inside a StackHighWaterScope (every
//                           pooled stack erased as it is handed out), against
//                           spawn_join_plain, the same loop outside one, in this run
//
// What copying costs Go: golang/go issue 18138, "runtime: new goroutines can spend
// excessive time in morestack" (https://github.com/golang/go/issues/18138): in one
// production system runtime.morestack took 7.4% of CPU time (comment of 2024-11-16),
// and 0% once the starting stack was set to 32 KiB.
#include <fcntl.h>
#include <malloc.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "../../lessons/04-echo-server/echo_server.hpp"
#include "../../lessons/06-time-and-events/chat_server.hpp"
#include "../../lessons/10-coroutines/co_echo_server.hpp"
#include "bench.hpp"
#include "fib/fiber.hpp"
#include "fib/stack_high_water.hpp"
#include "fib/tcp.hpp"
#include "fib/waiter.hpp"

namespace bench {
namespace {

[[noreturn]] void die(const char* what) {
    std::perror(what);
    std::exit(1);
}

// What one client's fiber used, recorded by the fiber itself as its handler returns.
struct StackUse {
    double high_water = 0;
    double resident = 0;  // bytes of the stack's pages that are resident
};

StackUse own_stack_use() {
    const fib::FiberRecord& fiber = *fib::FiberManager::current()->running();
    const std::size_t page = fib::page_size();
    const std::size_t pages = fiber.stack.size() / page;
    std::vector<unsigned char> resident(pages);
    long resident_pages = 0;
    if (mincore(fiber.stack.bottom(), fiber.stack.size(), resident.data()) == 0)
        for (unsigned char flags : resident) resident_pages += flags & 1;
    return {static_cast<double>(fib::stack_high_water(fiber)), static_cast<double>(resident_pages * page)};
}

class RecordedEchoServer : public EchoServer {
public:
    using EchoServer::EchoServer;
    std::vector<StackUse> uses;

protected:
    EchoConnection::Ended echo(int socket) override {
        const EchoConnection::Ended ended = EchoServer::echo(socket);
        uses.push_back(own_stack_use());
        return ended;
    }
};

class RecordedChatServer : public ChatServer {
public:
    using ChatServer::ChatServer;
    std::vector<StackUse> uses;

protected:
    void serve_client(int socket) override {
        ChatServer::serve_client(socket);
        uses.push_back(own_stack_use());
    }
};

// A server on a thread of its own, measured (StackHighWaterScope) from its first fiber on.
// `talk(server, port)` runs on this thread as the clients; the server stops after it.
template <class Server, class Options, class Talk>
void serve_while(const Options& options, Talk talk) {
    Server* server = nullptr;
    int stop_pipe[2];
    if (::pipe2(stop_pipe, O_CLOEXEC) != 0) die("bench: pipe2");
    std::atomic<std::uint16_t> port{0};
    std::thread thread([&] {
        const fib::StackHighWaterScope measured;
        fib::FiberManager manager;
        fib::Waiter waiter;
        Server local(options);
        server = &local;
        port.store(local.port());
        port.notify_all();
        local.serve(stop_pipe[0]);
        manager.wait_for_all();
        talk.finish(local);
    });
    port.wait(0);
    talk(*server, port.load());
    if (::write(stop_pipe[1], "x", 1) != 1) die("bench: stop");
    thread.join();
    ::close(stop_pipe[0]);
    ::close(stop_pipe[1]);
}

int connect_to(std::uint16_t port) {
    const fib::tcp::Address address = fib::tcp::make_address("127.0.0.1", port);
    const int socket = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (socket < 0 || ::connect(socket, address.get(), address.length) < 0) die("bench: connect");
    return socket;
}

void send_all(int socket, const char* data, std::size_t size) {
    for (std::size_t sent = 0; sent < size;) {
        const ssize_t n = ::send(socket, data + sent, size - sent, MSG_NOSIGNAL);
        if (n <= 0) die("bench: send");
        sent += static_cast<std::size_t>(n);
    }
}

void receive_exactly(int socket, char* data, std::size_t size) {
    if (::recv(socket, data, size, MSG_WAITALL) != static_cast<ssize_t>(size)) die("bench: recv");
}

// Reads lines until `wanted` of them start with `prefix`.
void read_lines_until(int socket, const char* prefix, int wanted) {
    std::string pending;
    char chunk[4096];
    while (wanted > 0) {
        const ssize_t n = ::recv(socket, chunk, sizeof chunk, 0);
        if (n <= 0) die("bench: chat recv");
        pending.append(chunk, static_cast<std::size_t>(n));
        for (std::size_t end; wanted > 0 && (end = pending.find('\n')) != std::string::npos;) {
            if (pending.compare(0, std::strlen(prefix), prefix) == 0) --wanted;
            pending.erase(0, end + 1);
        }
    }
}

constexpr int kEchoClients = 50;
constexpr std::size_t kEchoSizes[] = {1, 64, 1024, 16384};
constexpr int kChatMembers = 20;
constexpr int kChatLines = 5;

struct Deepest {
    double high_water = 0, resident = 0;
};

// The deepest high-water of one repetition's handlers, and their median resident stack.
Deepest summarize_uses(std::vector<StackUse> uses) {
    Deepest deepest;
    if (uses.empty()) return deepest;
    for (const StackUse& use : uses) deepest.high_water = std::max(deepest.high_water, use.high_water);
    std::sort(uses.begin(), uses.end(), [](const StackUse& a, const StackUse& b) { return a.resident < b.resident; });
    deepest.resident = uses[uses.size() / 2].resident;
    return deepest;
}

struct EchoTalk {
    Deepest* result;
    void operator()(RecordedEchoServer&, std::uint16_t port) const {
        std::vector<int> sockets;
        for (int i = 0; i < kEchoClients; ++i) sockets.push_back(connect_to(port));
        std::vector<char> out(16384, 'e'), in(16384);
        for (std::size_t size : kEchoSizes)
            for (int socket : sockets) {
                send_all(socket, out.data(), size);
                receive_exactly(socket, in.data(), size);
            }
        for (int socket : sockets) ::close(socket);
    }
    void finish(RecordedEchoServer& server) const { *result = summarize_uses(server.uses); }
};

struct ChatTalk {
    Deepest* result;
    void operator()(RecordedChatServer&, std::uint16_t port) const {
        std::vector<int> sockets;
        for (int i = 0; i < kChatMembers; ++i) {
            sockets.push_back(connect_to(port));
            read_lines_until(sockets.back(), "*** you are", 1);  // in the room now
        }
        const std::string line = "a line of chat, as people type them\n";
        for (int said = 0; said < kChatLines; ++said)
            for (int socket : sockets) send_all(socket, line.data(), line.size());
        for (int socket : sockets) read_lines_until(socket, "user ", (kChatMembers - 1) * kChatLines);
        for (int socket : sockets) ::close(socket);
    }
    void finish(RecordedChatServer& server) const { *result = summarize_uses(server.uses); }
};

// Heap growth per idle connection of a CoEchoServer: each connection has echoed a byte.
struct CoEchoTalk {
    double* result;
    void operator()(CoEchoServer&, std::uint16_t port) const {
        constexpr int kConnections = 500;
        std::vector<int> sockets;
        sockets.reserve(kConnections);
        char byte = 'c';
        const std::size_t before = mallinfo2().uordblks;
        for (int i = 0; i < kConnections; ++i) {
            sockets.push_back(connect_to(port));
            send_all(sockets.back(), &byte, 1);
            receive_exactly(sockets.back(), &byte, 1);
        }
        const std::size_t after = mallinfo2().uordblks;
        *result = (static_cast<double>(after) - static_cast<double>(before)) / kConnections;
        for (int socket : sockets) ::close(socket);
    }
    void finish(CoEchoServer&) const {}
};

Summary spawn_join_each(long operations, bool measured) {
    fib::FiberManager manager;
    return ns_per_op(operations, [measured](long count) {
        if (measured) {
            const fib::StackHighWaterScope scope;
            for (long i = 0; i < count; ++i) fib::Fiber([] {}).join();
        } else {
            for (long i = 0; i < count; ++i) fib::Fiber([] {}).join();
        }
    });
}

// How many times a stack that starts at `start` bytes and doubles is copied to hold `depth`.
int doublings(double start, double depth) {
    int copies = 0;
    for (double size = start; size < depth; size *= 2) ++copies;
    return copies;
}

Figure bytes_figure(const char* name, std::vector<double> values) {
    Figure figure{name, summarize(std::move(values)), "bytes"};
    figure.repetitions = static_cast<int>(kRepetitions);
    return figure;
}

void memory_costs(std::vector<Figure>& figures) {
    std::vector<double> echo_high, echo_resident, chat_high, frames;
    for (int i = 0; i < kRepetitions; ++i) {
        Deepest echo, chat;
        serve_while<RecordedEchoServer>(EchoOptions{.port = 0, .quiet = true}, EchoTalk{&echo});
        serve_while<RecordedChatServer>(ChatOptions{.port = 0, .quiet = true}, ChatTalk{&chat});
        double frame = 0;
        serve_while<CoEchoServer>(EchoOptions{.port = 0, .quiet = true}, CoEchoTalk{&frame});
        echo_high.push_back(echo.high_water);
        echo_resident.push_back(echo.resident);
        chat_high.push_back(chat.high_water);
        frames.push_back(frame);
    }
    const double reserved = fib::Stack::kDefaultSize;
    constexpr double kGoStart = 2048;
    Figure echo = bytes_figure("echo_stack_high_water", echo_high);
    Figure chat = bytes_figure("chat_stack_high_water", chat_high);
    Figure resident = bytes_figure("echo_stack_resident", echo_resident);
    Figure stack = bytes_figure("stack_reserved", std::vector<double>(kRepetitions, reserved));
    Figure frame = bytes_figure("co_echo_frame_bytes", frames);
    Figure go = bytes_figure("go_stack_start", std::vector<double>(kRepetitions, kGoStart));
    for (Figure* figure : {&echo, &chat, &resident})
        compare(*figure, "below stack_reserved", "reserved_over", reserved / figure->value.median);
    compare(frame, "below echo_stack_high_water", "high_water_over", echo.value.median / frame.value.median);
    const int copies = doublings(kGoStart, std::max(echo.value.median, chat.value.median));
    go.compared = "Go >= 1.4; reaching the deeper handler's depth copies it " + std::to_string(copies) +
                  " times (go#18138: morestack 7.4% of CPU)";
    go.result_extra = " copies_to_reach=" + std::to_string(copies);

    Figure plain{"spawn_join_plain", spawn_join_each(200'000, false)};
    Figure measured{"spawn_join_measured", spawn_join_each(200'000, true)};
    compare(measured, "spawn_join_plain", "plain_ratio", measured.value.median / plain.value.median);
    for (Figure* figure : {&echo, &chat, &resident, &stack, &frame, &go, &plain, &measured})
        figures.push_back(*figure);
}

[[maybe_unused]] const bool registered[] = {
    add(Section{"memory", 12, false, memory_costs}),
};

}  // namespace
}  // namespace bench
