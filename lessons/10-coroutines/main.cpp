// main.cpp — lesson 10's demo: tasks on the fibers' reactor, and fibers and tasks side by side.
//
// Five parts, each on the program's one thread:
//   1. Task: a value and an exception through co_await, and nothing run
//      before the first co_await (lazy);
//   2. the reactor: a task waits on a pipe a fiber writes to, and two tasks
//      sleep, waking in deadline order;
//   3. co::Event: signaled, a co_await does not suspend; set from another
//      thread, it wakes the task through the eventfd;
//   4. bridges: a fiber waits for a task's result (run_and_wait), and a task
//      hands a wait inside a callback to a fiber (in_fiber);
//   5. the echo server as tasks, with three clients, then the stop.
#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <stdexcept>
#include <thread>
#include <vector>

#include "co_echo_server.hpp"
#include "fib/awaitables.hpp"
#include "fib/bridge.hpp"
#include "fib/co_event.hpp"
#include "fib/executor.hpp"
#include "fib/fiber.hpp"
#include "fib/io.hpp"
#include "fib/task.hpp"
#include "fib/waiter.hpp"

using namespace std::chrono_literals;

namespace {

fib::Task<int> answer() {
    std::printf("   answer() runs\n");
    co_return 42;
}

fib::Task<int> refuse() {
    throw std::runtime_error("refused");
    co_return 0;
}

fib::Task<void> task_demo() {
    fib::Task<int> pending = answer();
    std::printf("   answer() made a Task; nothing ran yet\n");
    std::printf("   co_await: %d\n", co_await std::move(pending));
    try {
        co_await refuse();
    } catch (const std::runtime_error& error) {
        std::printf("   co_await refuse() threw: %s\n", error.what());
    }
}

fib::Task<void> read_pipe(int fd) {
    std::printf("   task: waiting for the pipe\n");
    const short revents = co_await fib::co::readable(fd);
    char text[16] = {};
    const ssize_t n = ::read(fd, text, sizeof text - 1);
    std::printf("   task: readable (revents 0x%x), read \"%.*s\"\n", static_cast<unsigned>(revents),
                static_cast<int>(n), text);
}

fib::Task<void> sleeper(std::chrono::milliseconds how_long) {
    co_await fib::co::sleep_for(how_long);
    std::printf("   task: slept %lld ms\n", static_cast<long long>(how_long.count()));
}

void reactor_demo(fib::Executor& executor) {
    std::printf("2. the reactor\n");
    int pipe_fds[2];
    if (::pipe2(pipe_fds, O_NONBLOCK | O_CLOEXEC) != 0) throw std::runtime_error("pipe2");
    executor.spawn(read_pipe(pipe_fds[0]), "read_pipe");
    fib::this_fiber::yield();  // the Executor's fiber runs the task to its co_await
    std::printf("   fiber: writing to the pipe\n");
    fib::io::write_all(pipe_fds[1], "hello", 5);
    executor.spawn(sleeper(20ms), "sleeper 20");
    executor.spawn(sleeper(10ms), "sleeper 10");
    executor.wait();
    fib::io::close(pipe_fds[0]);
    fib::io::close(pipe_fds[1]);
}

fib::Task<void> event_demo(fib::co::Event& event) {
    event.set();
    co_await event;  // signaled: no suspension, and it is reset
    std::printf("   a signaled Event: co_await went straight through, and reset it\n");
    std::thread setter([&event] { event.set(); });
    co_await event;  // not signaled: suspends until the other thread's set()
    setter.join();
    std::printf("   set from another thread: the task resumed through the eventfd\n");
}

fib::Task<int> count_yields(int n) {
    int counted = 0;
    for (int i = 0; i < n; ++i) {
        co_await fib::co::yield();
        ++counted;
    }
    co_return counted;
}

// A wait inside a callback that knows nothing of coroutines: std::for_each
// calls it, and io::wait parks the fiber in the middle of for_each's frame.
fib::Task<void> callback_demo(const std::array<int, 2>& fds) {
    const int ready = co_await fib::co::in_fiber([&fds] {
        int count = 0;
        std::for_each(fds.begin(), fds.end(), [&count](int fd) { count += fib::io::wait(fd, POLLIN) != 0; });
        return count;
    });
    std::printf("   task: a fiber waited inside std::for_each's callback for %d fds\n", ready);
}

void bridge_demo(fib::Executor& executor) {
    std::printf("4. bridges\n");
    std::printf("   fiber: run_and_wait(count_yields(3)) = %d\n", fib::co::run_and_wait(executor, count_yields(3)));
    int a[2], b[2];
    if (::pipe2(a, O_CLOEXEC) != 0 || ::pipe2(b, O_CLOEXEC) != 0) throw std::runtime_error("pipe2");
    const std::array<int, 2> read_ends{a[0], b[0]};
    executor.spawn(callback_demo(read_ends), "callback_demo");
    fib::this_fiber::yield();
    fib::io::write_all(a[1], "x", 1);
    fib::io::write_all(b[1], "y", 1);
    executor.wait();
    for (int fd : {a[0], a[1], b[0], b[1]}) fib::io::close(fd);
}

void echo_demo() {
    std::printf("5. the echo server as tasks\n");
    CoEchoServer server(EchoOptions{.port = 0, .quiet = true});
    int stop[2];
    if (::pipe2(stop, O_CLOEXEC) != 0) throw std::runtime_error("pipe2");
    fib::Fiber serving([&] { server.serve(stop[0]); });
    std::vector<fib::Fiber> clients;
    for (int i = 0; i < 3; ++i)
        clients.emplace_back([&server, i] {
            fib::UniqueFd socket = fib::tcp::connect("127.0.0.1", server.port());
            char line[32], back[32] = {};
            const int length = std::snprintf(line, sizeof line, "client %d says hi", i);
            fib::io::send_all(socket.get(), line, static_cast<std::size_t>(length));
            std::size_t got = 0;
            while (got < static_cast<std::size_t>(length)) {
                const ssize_t n = fib::io::read(socket.get(), back + got, sizeof back - 1 - got);
                if (n <= 0) break;
                got += static_cast<std::size_t>(n);
            }
            std::printf("   client %d got back \"%s\"\n", i, back);
        });
    for (fib::Fiber& client : clients) client.join();
    fib::io::write_all(stop[1], "x", 1);
    serving.join();
    std::printf("   stopped: %llu connections served, %llu bytes echoed, %zu open\n",
                static_cast<unsigned long long>(server.connections_served()),
                static_cast<unsigned long long>(server.bytes_echoed()), server.open_connections());
    fib::io::close(stop[0]);
    fib::io::close(stop[1]);
}

}  // namespace

int main() {
    fib::FiberManager manager;
    fib::Waiter waiter;
    {
        fib::Executor executor;
        std::printf("1. Task\n");
        executor.spawn(task_demo(), "task_demo");
        executor.wait();
        reactor_demo(executor);
        std::printf("3. co::Event\n");
        fib::co::Event event;
        executor.spawn(event_demo(event), "event_demo");
        executor.wait();
        bridge_demo(executor);
        const fib::ExecutorStats stats = executor.stats();
        std::printf("   the Executor: %llu tasks spawned, %llu resumes\n",
                    static_cast<unsigned long long>(stats.spawned), static_cast<unsigned long long>(stats.resumes));
    }
    echo_demo();
    return 0;
}
