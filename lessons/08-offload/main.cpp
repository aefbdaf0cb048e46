// main.cpp — lesson 8 demo: fibers await blocking work on a thread pool, and keep their thread.
//
// Part 1 is the async/await example that lesson 8 starts from: a fiber
// "downloads" two images one after the other, awaiting each, while another
// fiber of the same thread goes on ticking. Each line says which thread
// printed it: the work runs on a worker, the fibers never leave main's thread.
// Part 2 starts several pieces of work at once and waits for all, then for the
// first. Part 3 cancels a fiber while its work is still running.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <system_error>
#include <thread>

#include "fib/fiber.hpp"
#include "fib/offload.hpp"
#include "fib/timer.hpp"
#include "fib/waiter.hpp"

namespace {

using namespace std::chrono_literals;

// "main" on main's thread, "worker" on any of the pool's.
const char* thread_name() { return fib::ThreadPool::of_this_thread() ? "worker" : "main"; }

// Blocking work: the whole thread sleeps in the kernel, as in a slow read.
std::string download(int image) {
    std::this_thread::sleep_for(30ms);
    std::printf("  [%-8s] downloaded image %d\n", thread_name(), image);
    return "image " + std::to_string(image);
}

void part1_await_in_sequence(fib::ThreadPool& pool) {
    std::printf("Part 1: one fiber awaits two downloads in turn; another ticks meanwhile\n");
    bool done = false;
    fib::Fiber loader({.name = "loader"}, [&] {
        std::printf("  [%-8s] loader: download image 1, await\n", thread_name());
        std::string first = fib::offload(pool, [] { return download(1); });
        std::printf("  [%-8s] loader: got %s; download image 2, await\n", thread_name(), first.c_str());
        std::string second = fib::offload(pool, [] { return download(2); });
        std::printf("  [%-8s] loader: got %s\n", thread_name(), second.c_str());
        done = true;
    });
    fib::Fiber ticker({.name = "ticker"}, [&] {
        int ticks = 0;
        while (!done) {
            fib::sleep_for(10ms);
            ++ticks;
        }
        std::printf("  [%-8s] ticker: ticked %s while the loader waited\n", thread_name(),
                    ticks >= 2 ? "several times" : "too few times");
    });
    loader.join();
    ticker.join();
}

void part2_several_at_once(fib::ThreadPool& pool) {
    std::printf("Part 2: three pieces of work started at once\n");
    fib::Fiber fiber([&] {
        auto slow = fib::start(pool, [] {
            std::this_thread::sleep_for(60ms);
            return 1;
        });
        auto fast = fib::start(pool, [] {
            std::this_thread::sleep_for(5ms);
            return 2;
        });
        auto failing = fib::start(pool, []() -> int { throw std::runtime_error("disk on fire"); });
        std::printf("  the first to finish: index %zu of (slow, fast)\n", fib::wait_first(slow, fast));
        std::printf("  all: slow %d + fast %d\n", slow.get(), fast.get());
        try {
            failing.get();
        } catch (const std::exception& error) {
            std::printf("  the failing one rethrew on its fiber: %s\n", error.what());
        }
    });
    fiber.join();
}

void part3_cancel(fib::ThreadPool& pool) {
    std::printf("Part 3: a fiber cancelled while its work runs\n");
    fib::Fiber waiting({.name = "waiting"}, [&] {
        try {
            fib::offload(pool, [] { std::this_thread::sleep_for(50ms); return 0; });
        } catch (const std::system_error& error) {
            std::printf("  waiting: %s\n", error.code() == std::errc::operation_canceled
                                                ? "cancelled: it returned at once"
                                                : "failed");
        }
    });
    fib::this_fiber::yield();  // it is parked, its work on a worker
    waiting.cancel();
    waiting.join();
    fib::FiberManager::current()->wait_for_all();  // the drainer takes the late result home
    const fib::OffloadStats stats = fib::offload_stats();
    std::printf("  the late result came home and was dropped: %zu of %zu results home\n",
                stats.delivered, stats.started);
}

}  // namespace

int main() {
    fib::FiberManager manager;
    fib::Waiter waiter;
    fib::ThreadPool pool(2);
    part1_await_in_sequence(pool);
    part2_several_at_once(pool);
    part3_cancel(pool);
    return 0;
}
