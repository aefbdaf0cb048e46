// fiber_server.hpp — lesson 6: FiberServer, what the echo and chat servers share: accept, a fiber
// per client, stop by cancelling.
//
//   class ChatServer : public FiberServer {
//       void serve_client(int socket) override;   // on the client's own fiber
//   };
//   ChatServer server(...);          // listens now; server.port() says where
//   server.serve(stop_fd);           // until stop_fd turns readable
//
// Lesson 4's EchoServer stopped with shutdown() tricks: it shut the listening
// socket down to wake its acceptor, and each client's socket to make its read
// return 0, which only works for a fiber blocked in a read or a write of that
// very socket. Here the server cancels (cancel.hpp) the acceptor and every
// client fiber instead: whatever each is blocked in (a read, a send, a
// wait_any on its socket and its mail, a sleep), the wait returns with
// ECANCELED or cancelled(), and the fiber unwinds through its own code,
// closing what it holds, as on any error. The server keeps its client fibers
// in a list and waits for the last to end: each client's work is scoped to
// serve(), as structured concurrency asks.
#pragma once

#include <sys/socket.h>

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "fib/condvar.hpp"
#include "fib/fiber_record.hpp"
#include "fib/intrusive_list.hpp"
#include "fib/unique_fd.hpp"

class FiberServer {
public:
    // Binds and listens at once; throws std::system_error if it cannot.
    // `program` names the server in its log lines ("chat_server: accept: ...").
    FiberServer(const char* program, const char* bind, std::uint16_t port);
    // Serves a socket that already listens, made by the caller with options of its own.
    FiberServer(const char* program, fib::UniqueFd listener);
    virtual ~FiberServer() = default;
    FiberServer(const FiberServer&) = delete;
    FiberServer& operator=(const FiberServer&) = delete;

    std::uint16_t port() const { return port_; }

    // From a fiber of a thread with a FiberManager and a Waiter: accept and
    // serve until `stop_fd` turns readable (the program's signalfd, or a
    // test's pipe), or until the calling fiber is cancelled. Then cancel the
    // acceptor and every client, and return once each has ended. Call it once.
    void serve(int stop_fd);

    // Readable from any thread, e.g. a test's, while serve() runs.
    std::uint64_t clients_served() const { return served_.load(std::memory_order_relaxed); }
    std::size_t clients_connected() const { return open_.load(std::memory_order_relaxed); }

protected:
    // One client, on its own fiber, named after the client's address. Returns
    // when the client is done with; the socket is closed after it. When the
    // server stops, its waits return with ECANCELED or cancelled().
    virtual void serve_client(int socket) = 0;

    const char* program() const { return program_; }
    int listener() const { return listener_.get(); }

    // How the acceptor takes one connection: fib::io::accept by default.
    // A server may take them another way (one armed accept that keeps
    // handing connections over, say).
    // Returns the new socket, or -1 with errno as fib::io::accept says
    // (ECANCELED once the server stops); `peer` gets the client's address.
    virtual int accept_client(sockaddr* peer, socklen_t* peer_length);

    // For a client that stopped reading: makes the close of `socket` send a
    // reset and drop what the kernel still holds to send (up to megabytes),
    // instead of trying to deliver it for as long as the client lingers.
    static void reset_on_close(int socket);

private:
    // One connected client; lives in its fiber's frame.
    struct Client {
        fib::FiberRecord* fiber;
        fib::ListLink<Client> link;
    };

    void accept_clients();
    void back_off_after(int error);
    void run_client(fib::UniqueFd socket);

    const char* program_;
    fib::UniqueFd listener_;
    std::uint16_t port_;
    fib::UniqueFd spare_fd_;  // given up to accept-and-drop when out of fds
    bool stopping_ = false;
    fib::IntrusiveList<Client, &Client::link> clients_;
    fib::CondVar client_left_;  // notified whenever a client's fiber ends
    std::atomic<std::uint64_t> served_{0};
    std::atomic<std::size_t> open_{0};
};
