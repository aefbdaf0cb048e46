// L08_slow_server_test.cpp — lesson 8: slow_server over loopback. While one client's blocking
// work runs on the pool, another client is served; every byte comes back; a stop gives up the
// work still queued and waits for the work already started before serve() returns.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <string>

#include "../lessons/08-offload/slow_server.hpp"
#include "L04_echo_harness.hpp"
#include "L04_server_thread.hpp"

namespace {

using namespace l04_echo;

// The blocking work of these tests: it waits until the test opens the gate.
std::atomic<bool> gate{false};
std::atomic<int> working{0};
void wait_for_gate(int) {
    ++working;
    working.notify_all();
    while (!gate.load()) gate.wait(false);
}

fib::UniqueFd client_of(std::uint16_t port) {
    fib::UniqueFd socket = blocking_socket();
    EXPECT_TRUE(connect_to(socket.get(), port));
    return socket;
}

std::string ask(int socket, const std::string& request) {
    EXPECT_EQ(::send(socket, request.data(), request.size(), 0), static_cast<ssize_t>(request.size()));
    std::string answer(request.size(), '\0');
    std::size_t got = 0;
    while (got < answer.size()) {
        const ssize_t n = ::recv(socket, answer.data() + got, answer.size() - got, 0);
        if (n <= 0) break;
        got += static_cast<std::size_t>(n);
    }
    answer.resize(got);
    return answer;
}

}  // namespace

TEST(L08_SlowServer, AnotherClientIsServedWhileOneClientsBlockingWorkRunsOnThePool) {
    gate = false;
    working = 0;
    fib::ThreadPool pool(1);
    ServerThread<SlowServer> server(SlowServerOptions{.port = 0, .pool = &pool, .work = wait_for_gate});
    const fib::UniqueFd slow_client = client_of(server.port), quick_client = client_of(server.port);
    const int slow = slow_client.get(), quick = quick_client.get();
    const std::string request = "SLOW 1 and its bytes\n";
    ASSERT_EQ(::send(slow, request.data(), request.size(), 0), static_cast<ssize_t>(request.size()));
    working.wait(0);  // the slow work runs, and waits for the gate
    EXPECT_EQ(ask(quick, "hello from a quick client\n"), "hello from a quick client\n");
    EXPECT_EQ(ask(quick, std::string(3000, 'q')), std::string(3000, 'q'));
    gate = true;
    gate.notify_all();
    std::string answer(request.size(), '\0');
    ASSERT_EQ(::recv(slow, answer.data(), answer.size(), MSG_WAITALL), static_cast<ssize_t>(request.size()));
    EXPECT_EQ(answer, request);
    server.stop();
    EXPECT_EQ(server.live->slow_requests(), 1u);
}

// One worker: client a's slow work runs (and waits for the gate), client b's is queued behind
// it. The stop cancels both fibers: b's work is given up, never run, and b is closed at once;
// a's work has started and may use a's frame, so a's fiber waits for it, and serve() for a.
// The pool outlives the server, as in slow_main.cpp: its queue must not call through a server
// that is gone (b's job, run after the server, only carries the given-up work home).
TEST(L08_SlowServer, AStopGivesUpQueuedWorkAndWaitsForStartedWorkBeforeServeReturns) {
    gate = false;
    working = 0;
    fib::ThreadPool pool(1);
    {
        ServerThread<SlowServer> server(SlowServerOptions{.port = 0, .pool = &pool, .work = wait_for_gate});
        const fib::UniqueFd a = client_of(server.port), b = client_of(server.port);
        ASSERT_EQ(::send(a.get(), "SLOW 5\n", 7, 0), 7);
        working.wait(0);  // a's work runs on the one worker
        ASSERT_EQ(::send(b.get(), "SLOW 5\n", 7, 0), 7);
        ASSERT_TRUE(eventually([&] { return server.live->slow_requests() == 2; }));  // b's is queued
        ASSERT_EQ(::write(server.stop_pipe[1], "x", 1), 1);
        char byte;
        EXPECT_EQ(::recv(b.get(), &byte, 1, 0), 0);  // b: closed, nothing echoed, at once
        EXPECT_FALSE(server.returned.load());        // serve() still waits for a
        EXPECT_TRUE(eventually([&] { return server.live->clients_connected() == 1; }));  // a only
        gate = true;
        gate.notify_all();
        EXPECT_EQ(::recv(a.get(), &byte, 1, 0), 0);  // a: its work done, then closed
        server.stop();
        EXPECT_TRUE(server.after.returned);
        EXPECT_EQ(server.after.manager.records, 0u);
    }  // the server is gone; the pool is not, yet
    EXPECT_EQ(working.load(), 1);  // b's work never ran
}
