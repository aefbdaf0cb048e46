// echo_connection.hpp — lesson 4: EchoConnection, one client's echo loop, and the read buffer it shares.
//
// EchoServer runs one EchoConnection in each client's fiber. The loop knows
// nothing of accepting or stopping, so any server skeleton can run it:
//
//   SharedReadBuffer buffer;                   // one for all the connections of a thread
//   std::atomic<std::uint64_t> bytes_echoed{0};
//   EchoConnection connection(socket, buffer, bytes_echoed);
//   EchoConnection::Ended ended = connection.run();   // when the client has left
//
// Its two steps that may park the fiber are virtual hooks (receive and
// send_rest), so a server built around it can change how it waits, with a
// deadline say, and keep the rest of the loop.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

// Where every read of one thread's connections lands: up to 64 KiB, so that a
// 16 KiB message takes one read() and one send(), as in a hand-written event
// loop. One buffer per server, on the heap, rather than one per connection in
// its fiber's frame: 64 KiB would not fit a fiber's 64 KiB stack, and every
// page of a frame is resident as soon as the frame is set up
// (-fstack-clash-protection touches each page of a frame larger than one), so
// each connection, idle or not, would pay for all of it. Nor a thread_local:
// the C++ runtime makes one afresh for each thread of the process, and a
// runtime that gives each fiber thread-local variables of its own would make
// one per connection again. Only one fiber may use it at a time;
// EchoConnection::run says how that holds.
class SharedReadBuffer {
public:
    static constexpr std::size_t kSize = 64 * 1024;
    char* data() { return bytes_.get(); }

private:
    std::unique_ptr<char[]> bytes_ = std::make_unique_for_overwrite<char[]>(kSize);
};

class EchoConnection {
public:
    // How run() ended.
    struct Ended {
        std::uint64_t echoed;  // bytes sent back to this client
        int error;             // 0: the client closed; else the errno of the call that failed
    };

    // `socket`: a connected non-blocking socket, which stays the caller's to
    // close. `buffer`: the read buffer of this thread's connections.
    // `bytes_echoed`: a count for the whole server, raised as each chunk goes
    // out (any thread may read it meanwhile).
    EchoConnection(int socket, SharedReadBuffer& buffer, std::atomic<std::uint64_t>& bytes_echoed)
        : socket_(socket), buffer_(buffer), bytes_echoed_(bytes_echoed) {}
    virtual ~EchoConnection() = default;
    EchoConnection(const EchoConnection&) = delete;
    EchoConnection& operator=(const EchoConnection&) = delete;

    // Reads what the client sends and sends it all back, until the client
    // closes, a call fails, or the server shuts the socket down. Call it once,
    // from the fiber that serves this client.
    Ended run();

protected:
    // The hooks: the two steps at which the loop may park its fiber. Each
    // returns as the io:: helpers do: -1 with errno set on an error.
    //
    // receive: if `drained` (the last read took all the socket had), wait for
    // it to turn readable; then read up to `size` bytes into `buffer`. Returns
    // the bytes read, 0 at the client's end of file, or -1. Default: io::wait,
    // then io::read. An override may park before its read, never after it: a
    // park after the read would let another fiber's read overwrite `buffer`,
    // which is the shared one.
    virtual ssize_t receive(void* buffer, std::size_t size, bool drained);

    // send_rest: send all `size` bytes at `rest`, which the kernel could not
    // take at once, parking for as long as that takes. `rest` is this
    // connection's own copy, so parking is safe. Returns `size`, or -1.
    // Default: io::send_all.
    virtual ssize_t send_rest(const void* rest, std::size_t size);

    int socket() const { return socket_; }

private:
    void count_echoed(std::size_t bytes);

    const int socket_;
    SharedReadBuffer& buffer_;
    std::atomic<std::uint64_t>& bytes_echoed_;
    std::uint64_t echoed_ = 0;
};
