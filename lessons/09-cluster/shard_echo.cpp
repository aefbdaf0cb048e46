// shard_echo.cpp — lesson 9: the echo loop with its CPU cost and its write deadline.
#include "shard_echo.hpp"

#include <cerrno>
#include <utility>

#include "fib/io.hpp"
#include "fib/wait_any.hpp"

// Spins, rather than sleeps: the cost is the thread's CPU, which a sleep
// would hand to the other threads.
class ShardEchoServer::Connection : public EchoConnection {
public:
    Connection(int socket, ShardEchoServer& server)
        : EchoConnection(socket, server.read_buffer_, server.bytes_), options_(server.options_) {}

protected:
    // Works after the read and before the send: no park in between, as
    // EchoConnection asks of the shared buffer.
    ssize_t receive(void* buffer, std::size_t size, bool drained) override {
        const ssize_t received = EchoConnection::receive(buffer, size, drained);
        if (received > 0 && options_.work.count() > 0) {
            const auto until = std::chrono::steady_clock::now() + options_.work;
            while (std::chrono::steady_clock::now() < until) {
            }
        }
        return received;
    }

    // A client that stops reading is closed with a reset once write_timeout passes.
    ssize_t send_rest(const void* rest, std::size_t size) override {
        const ssize_t sent = fib::io::send_all(socket(), rest, size, options_.write_timeout);
        if (sent < 0 && errno == ETIMEDOUT) reset_on_close(socket());
        return sent;
    }

private:
    const ShardEchoOptions& options_;
};

ShardEchoServer::ShardEchoServer(fib::UniqueFd listener, const ShardEchoOptions& options)
    : FiberServer("cluster_echo", std::move(listener)), options_(options) {}

void ShardEchoServer::serve_client(int socket) { Connection(socket, *this).run(); }
