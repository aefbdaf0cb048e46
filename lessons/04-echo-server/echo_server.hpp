// echo_server.hpp — lesson 4: EchoServer, one fiber per client, on one thread.
//
// Used by the echo_server program (echo_main.cpp), the lesson's bounded demo
// (main.cpp) and the tests, which run it on an ephemeral port:
//
//   fib::FiberManager manager;
//   fib::Waiter waiter;
//   EchoServer server({.port = 0});           // listens now; server.port() says where
//   server.serve(stop_fd);                    // until stop_fd turns readable
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "echo_connection.hpp"
#include "fib/condvar.hpp"
#include "fib/intrusive_list.hpp"
#include "fib/unique_fd.hpp"

struct EchoOptions {
    const char* bind = "127.0.0.1";  // numeric IPv4/IPv6; 0.0.0.0 only when asked
    std::uint16_t port = 8001;       // 0: any free port, see EchoServer::port()
    bool quiet = false;              // no connect/disconnect log on stderr
};

class EchoServer {
public:
    // Binds and listens at once; throws std::system_error if it cannot.
    explicit EchoServer(const EchoOptions& options);
    virtual ~EchoServer() = default;

    std::uint16_t port() const { return port_; }

    // From a fiber of a thread with a FiberManager and a Waiter: accept and
    // echo until `stop_fd` turns readable (the program's signal pipe, or a
    // test's pipe). Then stop accepting, close every client and return once
    // each client's fiber has ended. Call it once.
    void serve(int stop_fd);

    // Readable from any thread, e.g. a test's, while serve() runs.
    std::uint64_t connections_served() const { return served_.load(std::memory_order_relaxed); }
    std::uint64_t bytes_echoed() const { return bytes_.load(std::memory_order_relaxed); }
    std::size_t open_connections() const { return open_.load(std::memory_order_relaxed); }

protected:
    // What a client's fiber runs between its "connected" and "left" lines: an
    // EchoConnection on `socket`, this server's read buffer and byte count.
    // Virtual, so that a server built on this one may run an EchoConnection
    // with hooks of its own, made from read_buffer() and bytes_counter().
    virtual EchoConnection::Ended echo(int socket);
    SharedReadBuffer& read_buffer() { return read_buffer_; }
    std::atomic<std::uint64_t>& bytes_counter() { return bytes_; }

private:
    // One connected client; lives in its fiber's frame.
    struct Client {
        int socket;
        fib::ListLink<Client> link;
    };

    void accept_clients();
    void back_off_after(int error);
    void serve_client(fib::UniqueFd socket);

    EchoOptions options_;
    fib::UniqueFd listener_;
    std::uint16_t port_;
    fib::UniqueFd spare_fd_;  // given up to accept-and-drop when out of fds
    bool stopping_ = false;
    fib::IntrusiveList<Client, &Client::link> clients_;
    fib::CondVar client_left_;  // notified whenever a client's fiber ends
    SharedReadBuffer read_buffer_;  // every client fiber reads here (the server has one thread)
    std::atomic<std::uint64_t> served_{0};
    std::atomic<std::uint64_t> bytes_{0};
    std::atomic<std::size_t> open_{0};
};
