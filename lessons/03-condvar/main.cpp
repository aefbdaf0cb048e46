// main.cpp — lesson 3 demo: a pipeline of three fibers joined by bounded channels.
//
//   source --numbers(2)--> square --squares(2)--> sink
//
// Each line of output says which fiber ran and what it did, so the
// interleaving is visible: a fiber runs until it blocks on a full or empty
// channel, and the blocked fiber wakes when the other side makes room or a
// value. Closing the first channel ends the whole pipeline in order.
#include <cstdio>
#include <optional>

#include "fib/channel.hpp"
#include "fib/fiber.hpp"

namespace {

constexpr int kCount = 6;

// Prints a send, first saying so when the channel is full and send() will wait.
void send_logged(const char* who, fib::Channel<int>& channel, int value) {
    if (channel.size() == channel.capacity())
        std::printf("%-7s %d waits: channel full\n", who, value);
    channel.send(value);
    std::printf("%-7s sent %d\n", who, value);
}

void source(fib::Channel<int>& numbers) {
    for (int n = 1; n <= kCount; ++n) send_logged("source", numbers, n);
    numbers.close();
    std::printf("source  closed numbers\n");
}

void square(fib::Channel<int>& numbers, fib::Channel<int>& squares) {
    while (std::optional<int> n = numbers.receive()) {
        std::printf("square  got %d\n", *n);
        send_logged("square", squares, *n * *n);
    }
    squares.close();
    std::printf("square  numbers drained; closed squares\n");
}

void sink(fib::Channel<int>& squares, int& total) {
    while (std::optional<int> n = squares.receive()) {
        total += *n;
        std::printf("sink    got %d (total %d)\n", *n, total);
    }
    std::printf("sink    squares drained\n");
}

}  // namespace

int main() {
    fib::FiberManager manager;
    fib::Channel<int> numbers(2);
    fib::Channel<int> squares(2);
    int total = 0;

    // Started in this order, so the ready queue runs source first.
    fib::Fiber source_fiber({.name = "source"}, source, std::ref(numbers));
    fib::Fiber square_fiber({.name = "square"}, square, std::ref(numbers), std::ref(squares));
    fib::Fiber sink_fiber({.name = "sink"}, sink, std::ref(squares), std::ref(total));

    // main blocks in each join() (parked, out of the ready queue) until that fiber ends.
    source_fiber.join();
    square_fiber.join();
    sink_fiber.join();

    const fib::ManagerStats stats = manager.stats();
    std::printf("main    sum of squares 1..%d = %d; %llu context switches\n", kCount, total,
                static_cast<unsigned long long>(stats.switches));
    return total == kCount * (kCount + 1) * (2 * kCount + 1) / 6 ? 0 : 1;
}
