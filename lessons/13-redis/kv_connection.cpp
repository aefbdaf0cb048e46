// kv_connection.cpp — lesson 13: a client's reader and writer fibers, its output, and its limits.
#include "kv_connection.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

#include "commands.hpp"
#include "fib/io.hpp"
#include "fib/timer.hpp"
#include "fib/wait_any.hpp"

KvConnection::KvConnection(int socket, kv::Store& store, const KvLimits& limits, SharedReadBuffer& read_buffer,
                           long long id)
    : socket_(socket), store_(store), limits_(limits), read_buffer_(read_buffer), parser_(limits.requests) {
    this->id = id;
}

KvConnection::~KvConnection() { store_.channels.forget(*this); }

// The reader is the scope's body; the writer its child, which ends once the
// reader is done and the output has gone (or at once, if the client was
// dropped: the scope is cancelled then).
ClientEnd KvConnection::run() {
    fib::scope({.name = fib::this_fiber::name()}, [this](fib::Scope& fibers) {
        fibers_ = &fibers;
        fibers.spawn({.name = "writer"}, [this] { write_replies(); });
        read_commands();
        reading_done_ = true;
        output_waits_.notify_one();
    });
    fibers_ = nullptr;
    if (end_ == ClientEnd::kLeft && quit && !hung_up_) end_ = ClientEnd::kQuit;
    return end_;
}

// Waits for a request only when the last read took all the socket had
// (`drained`): a read that filled the buffer may have left more behind, and
// reading it at once saves a trip through the Waiter.
void KvConnection::read_commands() {
    bool drained = true;
    while (!ended()) {
        if (drained) {
            const fib::Ready ready = fib::io::wait(socket_, POLLIN, limits_.idle_timeout);
            if (ready.timed_out()) return drop(ClientEnd::kIdle);
            if (ready.cancelled()) return drop(ClientEnd::kStopped);
        }
        const ssize_t n = ::read(socket_, read_buffer_.data(), SharedReadBuffer::kSize);
        if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
            drained = errno == EAGAIN;
            continue;
        }
        if (n < 0) return drop(ClientEnd::kError);
        if (n == 0) return;  // the client closed its end
        drained = static_cast<std::size_t>(n) < SharedReadBuffer::kSize;
        // Taken into the parser before any park: the buffer is every client's.
        parser_.feed({read_buffer_.data(), static_cast<std::size_t>(n)});
        if (!run_commands()) return;
        send_now();
    }
}

// Every complete command the parser holds, in order; false when the client
// is done with (QUIT, a protocol error, a drop, a cancel).
bool KvConnection::run_commands() {
    while (auto command = parser_.next()) {
        kv::execute(*command, store_, *this, kv::clock_now(), output_);
        if (ended()) return false;
        if (held() > limits_.pause_output && !wait_for_room()) return false;
    }
    if (!parser_.failed()) return true;
    // Redis sends the error (or nothing, for a query buffer past its limit) and closes.
    output_ += parser_.error_reply();
    end_ = ClientEnd::kProtocolError;
    return false;
}

// Hands what waits to the kernel without waiting: what it takes at once is
// gone, the rest is the writer's. While the writer sends, it is the writer's
// turn: bytes must leave in order.
void KvConnection::send_now() {
    if (output_.empty() || sending_ != 0) return;
    const ssize_t n = ::send(socket_, output_.data(), output_.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0 && errno != EAGAIN && errno != EINTR) return drop(ClientEnd::kError);
    if (n > 0) output_.erase(0, static_cast<std::size_t>(n));
    if (!output_.empty()) output_waits_.notify_one();
}

// The reader's pause: the writer wakes it as each batch goes out.
bool KvConnection::wait_for_room() {
    send_now();
    while (held() > limits_.pause_output && !ended())
        if (!fib::wait_for(output_sent_, fib::Clock::duration::max()).notified()) return false;
    return !ended();
}

// Takes the whole output at each turn, so that what is appended while it
// sends waits for the next turn, in order.
void KvConnection::write_replies() {
    std::string batch;
    for (;;) {
        while (output_.empty() && !reading_done_)
            if (!fib::wait_for(output_waits_, fib::Clock::duration::max()).notified()) return;
        if (output_.empty()) return;
        batch.swap(output_);
        sending_ = batch.size();
        const ssize_t sent = fib::io::send_all(socket_, batch.data(), batch.size(), limits_.write_timeout);
        sending_ = 0;
        batch.clear();
        if (sent < 0) return drop(errno == ETIMEDOUT ? ClientEnd::kSlowReader : ClientEnd::kError);
        output_sent_.notify_all();
    }
}

// A message from another client's command: appended, and the writer woken.
// Past the limit the client is dropped; its fibers end on their own turn, so
// the publisher's walk through the subscribers is not disturbed.
void KvConnection::deliver(std::string_view reply) {
    if (end_ != ClientEnd::kLeft) return;
    if (held() + reply.size() > limits_.max_output) return drop(ClientEnd::kOverLimit);
    output_ += reply;
    if (sending_ == 0) output_waits_.notify_one();
}

// Before it parks, a blocked command's client is sent the replies before it;
// and a hang-up ends the wait, as it would end Redis's.
kv::WaitEnd KvConnection::wait_to_be_served(fib::Event& served, fib::Clock::duration timeout) {
    flush();
    const fib::Ready ready = fib::wait_any({served, {socket_, POLLRDHUP}}, timeout);
    if (ready.timed_out()) return kv::WaitEnd::kTimedOut;
    if (ready.index == 0) return kv::WaitEnd::kServed;
    hung_up_ = true;
    return kv::WaitEnd::kGone;
}

// The first reason wins. The shutdown wakes nothing by itself; the cancel
// ends both fibers' waits, and the kernel drops what the socket held.
void KvConnection::drop(ClientEnd why) {
    if (end_ != ClientEnd::kLeft) return;
    end_ = why;
    output_.clear();
    if (why != ClientEnd::kStopped) ::shutdown(socket_, SHUT_RDWR);
    if (fibers_) fibers_->cancel();
}
