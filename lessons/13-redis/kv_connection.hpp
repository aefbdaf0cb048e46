// kv_connection.hpp — lesson 13: one client of the server: a fiber that reads and runs its commands, one that sends.
//
//   KvConnection client(socket, store, limits, read_buffer);
//   client.run();     // on the client's fiber: returns when the client has gone
//
// A client is a scope (lesson 12) of two fibers:
//
//   reader   reads, feeds the parser, runs each command (which appends its
//            reply to the output), then sends what it can at once: one
//            read() and one send() per batch of pipelined commands, as
//            Redis's event loop does, and no switch
//   writer   sends what the kernel would not take at once, waiting for the
//            socket with a write deadline; and what other clients' commands
//            deliver (PUBLISH) while the reader waits for a request
//
// Everything a client can make the server hold is bounded:
//   requests  by the parser's Limits (resp.hpp), Redis's own
//   replies   the reader stops running commands while more than
//             pause_output bytes wait to be sent, until the writer has sent
//             them: a client that pipelines and never reads holds at most
//             that and one reply, and the write deadline then closes it
//   messages  a subscriber can be sent messages it never asked for, and the
//             publisher must not wait for it: past max_output bytes waiting,
//             it is disconnected (Redis's client-output-buffer-limit for
//             pubsub, 32 MB), and nobody else notices
//
// A protocol error gets Redis's error reply, then the connection closes, as
// Redis closes it. The socket stays the caller's to close.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "../04-echo-server/echo_connection.hpp"
#include "fib/condvar.hpp"
#include "fib/scope.hpp"
#include "resp.hpp"
#include "session.hpp"
#include "store.hpp"

struct KvLimits {
    resp::Limits requests;                           // Redis's defaults
    std::size_t pause_output = 1024 * 1024;          // replies waiting: read no more commands
    std::size_t max_output = 32 * 1024 * 1024;       // waiting to be sent: disconnect
    fib::Clock::duration idle_timeout = fib::Clock::duration::max();  // silent this long: closed
    fib::Clock::duration write_timeout = std::chrono::seconds(30);    // not taking its replies
};

// Why run() ended, for the server's counters.
enum class ClientEnd { kLeft, kQuit, kProtocolError, kIdle, kSlowReader, kOverLimit, kError, kStopped };

class KvConnection final : public kv::Session {
public:
    // `socket`: connected, non-blocking. `read_buffer`: the thread's, shared by its clients.
    KvConnection(int socket, kv::Store& store, const KvLimits& limits, SharedReadBuffer& read_buffer, long long id);
    ~KvConnection() override;  // leaves every channel
    KvConnection(const KvConnection&) = delete;
    KvConnection& operator=(const KvConnection&) = delete;

    // Serves the client until it goes, QUITs, breaks the protocol or a limit,
    // or the calling fiber is cancelled. Call once, from the client's fiber.
    ClientEnd run();

    void deliver(std::string_view reply) override;
    void flush() override { send_now(); }
    kv::WaitEnd wait_to_be_served(fib::Event& served, fib::Clock::duration timeout) override;

private:
    void read_commands();
    bool run_commands();
    void write_replies();
    void send_now();
    bool wait_for_room();
    void drop(ClientEnd why);
    std::size_t held() const { return output_.size() + sending_; }
    bool ended() const { return end_ != ClientEnd::kLeft || quit; }

    const int socket_;
    kv::Store& store_;
    const KvLimits& limits_;
    SharedReadBuffer& read_buffer_;
    resp::RequestParser parser_;
    std::string output_;           // replies and messages not yet handed to the kernel
    std::size_t sending_ = 0;      // bytes the writer is sending now
    bool reading_done_ = false;
    fib::CondVar output_waits_;    // the writer waits here for output
    fib::CondVar output_sent_;     // a reader paused on its output waits here
    fib::Scope* fibers_ = nullptr; // the reader and the writer, while run() runs
    bool hung_up_ = false;         // seen by a blocked command's wait
    ClientEnd end_ = ClientEnd::kLeft;
};
