// echo_epoll.cpp — lesson 5: the fair opponent, an echo server on a hand-written epoll loop.
//
//   build/lessonN/echo_epoll [--port N] [--bind ADDR] [--quiet]
//
// What echo_server does with fibers and a Waiter, done by hand the way event-loop
// servers are written: one thread, non-blocking sockets, one level-triggered epoll
// set, and per client a few fields instead of a fiber and its stack. make
// bench-echo runs it beside echo_server, so that the lesson can show what the
// fibers cost over the loop they hide (scripts/bench-echo.sh).
//
// A client is watched for EPOLLIN while the server owes it nothing. When it turns
// readable, it gets one read() into the shared buffer and one send() of what came.
// If the send is short (the client is slow to read its echoes), the rest is kept
// and the client is watched for EPOLLOUT instead, until the rest is sent: reading
// pauses meanwhile, so the server never blocks, never drops a byte, and never
// holds more than one read's worth per client.
//
// SIGINT and SIGTERM arrive through the self-pipe of server_program.hpp, which
// sits in the epoll set beside the listener.
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <utility>
#include <vector>

#include "../04-echo-server/server_program.hpp"
#include "fib/tcp.hpp"
#include "fib/unique_fd.hpp"

namespace {

constexpr const char* kUsage =
    "usage: echo_epoll [--port N] [--bind ADDR] [--quiet] [--help]\n"
    "\n"
    "A TCP echo server written as one hand-made epoll loop, without fibers: what\n"
    "echo_server (one fiber per client) is measured against in lesson 5.\n"
    "\n"
    "  --port N      port to listen on (default 8001; 0 lets the kernel pick one, and the\n"
    "                'listening on' line says which)\n"
    "  --bind ADDR   numeric IPv4/IPv6 address to listen on (default 127.0.0.1)\n"
    "  --quiet       do not log each client's connect and disconnect on stderr\n"
    "  --help        print this and exit\n"
    "\n"
    "Ctrl-C (SIGINT) or SIGTERM: close every client, print a summary, exit 0.\n";

constexpr int kEventBatch = 256;

// One client. The socket is invalid while no client has this fd.
struct Client {
    fib::UniqueFd socket;
    fib::tcp::AddressText name{};
    std::uint64_t echoed = 0;  // bytes sent back
    std::vector<char> unsent;  // what a short send() left of the last read
};

class EchoLoop {
public:
    EchoLoop(int listener, int stop_fd, bool quiet)
        : listener_(listener), stop_fd_(stop_fd), quiet_(quiet) {
        watch(stop_fd, EPOLL_CTL_ADD, EPOLLIN);
        watch(listener, EPOLL_CTL_ADD, EPOLLIN);
    }

    // Serves until the stop pipe turns readable (true) or epoll fails (false).
    // An event's data is its fd, and clients_ is indexed by fd: a lookup is
    // O(1). A fd closed while handling an event cannot show up again later in
    // the same batch: epoll reports each fd at most once per call.
    bool run() {
        epoll_event events[kEventBatch];
        for (;;) {
            const int ready = ::epoll_wait(epoll_.get(), events, kEventBatch, -1);
            if (ready < 0 && errno == EINTR) continue;  // a stop signal: its pipe says so next
            if (ready < 0) {
                std::perror("echo_epoll: epoll_wait");
                return false;
            }
            for (int i = 0; i < ready; ++i) {
                const int fd = events[i].data.fd;
                if (fd == stop_fd_) return true;
                if (fd == listener_) {
                    accept_clients();
                    continue;
                }
                // Errors and hang-ups come whatever the interest: the next
                // read() or send() reports them, and the client is closed.
                Client& client = clients_[static_cast<std::size_t>(fd)];
                if (client.unsent.empty())
                    receive(client);
                else
                    send_unsent(client);
            }
        }
    }

    std::uint64_t connections_served() const { return connections_served_; }
    std::uint64_t bytes_echoed() const { return bytes_echoed_; }
    std::uint64_t interest_changes() const { return interest_changes_; }

private:
    // Accepts until EAGAIN: one epoll_wait for a whole burst of connections.
    void accept_clients() {
        for (;;) {
            sockaddr_storage peer{};
            socklen_t peer_length = sizeof peer;
            fib::UniqueFd socket(::accept4(listener_, reinterpret_cast<sockaddr*>(&peer),
                                           &peer_length, SOCK_NONBLOCK | SOCK_CLOEXEC));
            if (!socket && errno == ECONNABORTED) continue;
            if (!socket) return back_off_after(errno);
            fib::tcp::set_no_delay(socket.get());  // as the other servers do: no Nagle
            const int fd = socket.get();
            if (static_cast<std::size_t>(fd) >= clients_.size()) clients_.resize(fd + 1);
            Client& client = clients_[static_cast<std::size_t>(fd)];
            client.socket = std::move(socket);
            client.name = fib::tcp::to_text(reinterpret_cast<sockaddr*>(&peer));
            watch(fd, EPOLL_CTL_ADD, EPOLLIN);
            ++connections_served_;
            ++open_clients_;
            if (!quiet_)
                std::fprintf(stderr, "echo_epoll: %s connected (%zu open)\n", client.name.text,
                             open_clients_);
        }
    }

    // accept() failed. EAGAIN: the burst is over. Out of fds or buffers
    // (EMFILE, ENFILE, ENOBUFS, ENOMEM), the listener stays readable and
    // accepting again would spin, so it leaves the epoll set until a client
    // leaves. Any other error concerns one connection: the next turn goes on.
    void back_off_after(int error) {
        if (error == EAGAIN) return;
        std::fprintf(stderr, "echo_epoll: accept: %s\n", std::strerror(error));
        const bool out_of_resources =
            error == EMFILE || error == ENFILE || error == ENOBUFS || error == ENOMEM;
        if (!out_of_resources || open_clients_ == 0) return;
        watch(listener_, EPOLL_CTL_DEL, 0);
        accepting_paused_ = true;
    }

    // One read() per turn: bytes left in the socket keep it ready (level
    // triggering), so the next epoll_wait brings it back after the others.
    void receive(Client& client) {
        const ssize_t received = ::read(client.socket.get(), buffer_, sizeof buffer_);
        if (received < 0 && errno == EAGAIN) return;
        if (received <= 0) return close_client(client, received < 0 ? errno : 0);
        const auto length = static_cast<std::size_t>(received);
        const ssize_t sent = ::send(client.socket.get(), buffer_, length, MSG_NOSIGNAL);
        if (sent < 0 && errno != EAGAIN) return close_client(client, errno);
        const std::size_t taken = sent < 0 ? 0 : static_cast<std::size_t>(sent);
        count_echoed(client, taken);
        if (taken == length) return;
        client.unsent.assign(buffer_ + taken, buffer_ + length);
        watch(client.socket.get(), EPOLL_CTL_MOD, EPOLLOUT);
    }

    // The socket has room again: send what it owes; once all is out, read again.
    void send_unsent(Client& client) {
        const ssize_t sent =
            ::send(client.socket.get(), client.unsent.data(), client.unsent.size(), MSG_NOSIGNAL);
        if (sent < 0 && errno == EAGAIN) return;
        if (sent < 0) return close_client(client, errno);
        count_echoed(client, static_cast<std::size_t>(sent));
        client.unsent.erase(client.unsent.begin(), client.unsent.begin() + sent);
        if (client.unsent.empty()) watch(client.socket.get(), EPOLL_CTL_MOD, EPOLLIN);
    }

    void count_echoed(Client& client, std::size_t bytes) {
        client.echoed += bytes;
        bytes_echoed_ += bytes;
    }

    // Closing the socket also takes it out of the epoll set: nothing else holds its file.
    void close_client(Client& client, int error) {
        if (!quiet_)
            std::fprintf(stderr, "echo_epoll: %s left after %llu bytes%s%s\n", client.name.text,
                         static_cast<unsigned long long>(client.echoed), error ? ": " : "",
                         error ? std::strerror(error) : "");
        client = Client{};
        --open_clients_;
        if (accepting_paused_) watch(listener_, EPOLL_CTL_ADD, EPOLLIN);
        accepting_paused_ = false;
    }

    void watch(int fd, int operation, std::uint32_t events) {
        epoll_event event{.events = events, .data = {.fd = fd}};
        if (::epoll_ctl(epoll_.get(), operation, fd, &event) < 0)
            std::perror("echo_epoll: epoll_ctl");
        ++interest_changes_;
    }

    const int listener_, stop_fd_;
    const bool quiet_;
    fib::UniqueFd epoll_{::epoll_create1(EPOLL_CLOEXEC)};
    std::vector<Client> clients_;  // indexed by fd
    std::size_t open_clients_ = 0;
    bool accepting_paused_ = false;
    std::uint64_t connections_served_ = 0, bytes_echoed_ = 0, interest_changes_ = 0;
    // Every read lands here; only a short send copies out of it. 64 KiB, as the
    // fiber server reads (SharedReadBuffer), so that the two make the same
    // calls per message, a 16 KiB message included.
    char buffer_[64 * 1024];
};

}  // namespace

int main(int argc, char** argv) {
    const ServerFlags flags = parse_server_flags(argc, argv, {"echo_epoll", kUsage, {}});
    raise_fd_limit();
    const int stop_fd = stop_signal_pipe();

    fib::UniqueFd listener;
    try {
        listener = fib::tcp::listen(flags.bind, flags.port);
    } catch (const std::exception& error) {
        std::fprintf(stderr, "echo_epoll: %s\n", error.what());
        return 1;
    }
    std::printf("echo_epoll: listening on %s:%u; Ctrl-C stops it\n", flags.bind,
                fib::tcp::local_port(listener.get()));
    std::fflush(stdout);

    EchoLoop loop(listener.get(), stop_fd, flags.quiet);
    if (!loop.run()) return 1;

    std::printf(
        "echo_epoll: %s: served %llu connections, echoed %llu bytes, %llu interest changes\n",
        stop_signal_name(stop_fd), static_cast<unsigned long long>(loop.connections_served()),
        static_cast<unsigned long long>(loop.bytes_echoed()),
        static_cast<unsigned long long>(loop.interest_changes()));
    std::fflush(stdout);
    // The loop's destructor closes every client that is still connected.
    return 0;
}
