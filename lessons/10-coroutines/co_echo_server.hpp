// co_echo_server.hpp — lesson 10: CoEchoServer, lesson 4's echo server with a task per client instead of a fiber.
//
// The same service, options, counters and stop as EchoServer (lesson 4's
// echo_server.hpp), so the same tests and the same echo_load run against it:
//
//   fib::FiberManager manager;
//   fib::Waiter waiter;
//   CoEchoServer server({.port = 0});         // listens now; server.port() says where
//   server.serve(stop_fd);                    // until stop_fd turns readable
//
// serve() runs on a fiber (main); the acceptor and every client are tasks on
// an Executor of its own, each suspended on its socket between reads, in a
// coroutine frame of a few hundred bytes instead of a fiber's stack.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "../04-echo-server/echo_connection.hpp"
#include "../04-echo-server/echo_server.hpp"
#include "fib/co_event.hpp"
#include "fib/executor.hpp"
#include "fib/task.hpp"
#include "fib/tcp.hpp"
#include "fib/unique_fd.hpp"

class CoEchoServer {
public:
    // Binds and listens at once; throws std::system_error if it cannot.
    explicit CoEchoServer(const EchoOptions& options);

    std::uint16_t port() const { return port_; }

    // From a fiber of a thread with a FiberManager and a Waiter: accept and
    // echo until `stop_fd` turns readable; then destroy every task (each
    // client's frame closes its socket) and return. Call it once.
    void serve(int stop_fd);

    // Readable from any thread while serve() runs.
    std::uint64_t connections_served() const { return served_.load(std::memory_order_relaxed); }
    std::uint64_t bytes_echoed() const { return bytes_.load(std::memory_order_relaxed); }
    std::size_t open_connections() const { return open_.load(std::memory_order_relaxed); }
    // What serve()'s Executor counted, once serve() has returned.
    fib::ExecutorStats executor_stats() const { return executor_stats_; }

private:
    // A client's socket, held in its task's frame: closed and counted out
    // however the task ends, at its end or destroyed by the stop.
    struct ClientSlot {
        CoEchoServer& server;
        fib::UniqueFd socket;
        ~ClientSlot();
    };

    fib::Task<void> accept_clients();
    fib::Task<void> back_off_after(int error);
    fib::Task<void> serve_client(fib::UniqueFd socket, fib::tcp::AddressText name);
    fib::Task<EchoConnection::Ended> echo(int socket);
    fib::Task<bool> send_rest(int socket, const char* rest, std::size_t size);

    EchoOptions options_;
    fib::UniqueFd listener_;
    std::uint16_t port_;
    fib::UniqueFd spare_fd_;     // given up to accept-and-drop when out of fds
    fib::Executor* executor_ = nullptr;  // serve()'s, while it runs
    bool backing_off_ = false;   // the acceptor waits for a client to leave
    fib::co::Event client_left_;  // set when a client leaves while backing_off_
    fib::ExecutorStats executor_stats_;
    SharedReadBuffer read_buffer_;  // every client task reads here (the server has one thread)
    std::atomic<std::uint64_t> served_{0};
    std::atomic<std::uint64_t> bytes_{0};
    std::atomic<std::size_t> open_{0};
};
