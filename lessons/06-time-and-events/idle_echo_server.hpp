// idle_echo_server.hpp — lesson 6: lesson 4's EchoServer, closing clients that stay silent too long.
//
//   IdleEchoServer server({.port = 0}, 30s);   // echo_server --idle-timeout 30
//
// Each fd is a resource: a client that connects and then says nothing would
// hold one for ever, and enough of them would leave no fd for anyone else.
// Here every wait and read a client's fiber makes carries a deadline (io::wait
// and io::read with a timeout, on this lesson's timers): silent that long, the read
// fails with ETIMEDOUT, and the fiber closes the connection like on any error.
// A client that keeps talking never meets its deadline; each read sets a new one.
#pragma once

#include <poll.h>

#include <atomic>
#include <cerrno>
#include <cstdint>

#include "../04-echo-server/echo_server.hpp"
#include "fib/wait_any.hpp"

class IdleEchoServer : public EchoServer {
public:
    IdleEchoServer(const EchoOptions& options, fib::Clock::duration idle_timeout)
        : EchoServer(options), idle_timeout_(idle_timeout) {}

    // Clients closed because they were silent too long; readable from any thread.
    std::uint64_t idle_closed() const { return idle_closed_.load(std::memory_order_relaxed); }

protected:
    EchoConnection::Ended echo(int socket) override {
        IdleConnection connection(socket, *this);
        return connection.run();
    }

private:
    // Lesson 4's echo loop with a deadline on its receive hook.
    class IdleConnection : public EchoConnection {
    public:
        IdleConnection(int socket, IdleEchoServer& server)
            : EchoConnection(socket, server.read_buffer(), server.bytes_counter()), server_(server) {}

    protected:
        ssize_t receive(void* buffer, std::size_t size, bool drained) override {
            ssize_t received = -1;
            if (drained && fib::io::wait(socket(), POLLIN, server_.idle_timeout_).timed_out())
                errno = ETIMEDOUT;
            else
                received = fib::io::read(socket(), buffer, size, server_.idle_timeout_);
            if (received < 0 && errno == ETIMEDOUT)
                server_.idle_closed_.fetch_add(1, std::memory_order_relaxed);
            return received;
        }

    private:
        IdleEchoServer& server_;
    };

    fib::Clock::duration idle_timeout_;
    std::atomic<std::uint64_t> idle_closed_{0};
};
