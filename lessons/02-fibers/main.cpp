// main.cpp — lesson 2 demo: a producer and a consumer taking turns, then 10,000 fibers.
//
// Creating the FiberManager turns main into fiber 0. From then on main spawns
// fibers, joins them, and waits for them like any other fiber: whenever main
// blocks, the manager switches to the next ready fiber.
#include <cstdio>
#include <optional>

#include "fib/fiber.hpp"

namespace {

// A one-slot mailbox. Cooperative scheduling means no fiber can be interrupted
// between checking the slot and filling it, so no lock is needed: a fiber
// only loses the CPU when it calls yield() (or blocks).
struct Mailbox {
    std::optional<int> slot;
    bool closed = false;
};

void produce(Mailbox& box, int count) {
    for (int i = 1; i <= count; ++i) {
        while (box.slot) fib::this_fiber::yield();  // wait until the consumer emptied it
        box.slot = i * i;
        std::printf("%-9s put   %2d\n", fib::this_fiber::name(), *box.slot);
    }
    box.closed = true;
}

void consume(Mailbox& box) {
    for (;;) {
        while (!box.slot && !box.closed) fib::this_fiber::yield();
        if (!box.slot) return;
        std::printf("%-9s took  %2d\n", fib::this_fiber::name(), *box.slot);
        box.slot.reset();
    }
}

}  // namespace

int main() {
    fib::FiberManager manager;  // from here on, main is fiber 0

    // Part 1: two fibers hand values over, taking turns with yield().
    Mailbox box;
    fib::Fiber producer({.name = "producer"}, produce, std::ref(box), 5);
    fib::Fiber consumer({.name = "consumer"}, consume, std::ref(box));
    std::printf("main      spawned producer (fiber %llu) and consumer (fiber %llu); joining\n",
                static_cast<unsigned long long>(producer.id()),
                static_cast<unsigned long long>(consumer.id()));
    producer.join();  // main blocks here; producer and consumer run
    consumer.join();

    // Part 2: 10,000 fibers, spawned in waves of 1,000. Each yields once before
    // adding, so all fibers of a wave are alive at the same time.
    constexpr int kWaves = 10, kPerWave = 1000;
    long total = 0;
    for (int wave = 0; wave < kWaves; ++wave) {
        for (int i = 1; i <= kPerWave; ++i) {
            const long value = wave * kPerWave + i;
            fib::Fiber([&total, value] {
                fib::this_fiber::yield();
                total += value;
            }).detach();
        }
        manager.wait_for_all();
    }
    const long expected = 10000L * 10001 / 2;
    const fib::ManagerStats stats = manager.stats();
    std::printf("main      10000 fibers added up to %ld (expected %ld): %s\n", total, expected,
                total == expected ? "ok" : "WRONG");
    std::printf("main      %llu fibers ran on %zu stacks; %llu context switches\n",
                static_cast<unsigned long long>(stats.spawned), stats.stacks_created,
                static_cast<unsigned long long>(stats.switches));
    return total == expected ? 0 : 1;
}
