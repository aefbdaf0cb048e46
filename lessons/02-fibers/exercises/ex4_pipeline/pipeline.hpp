// pipeline.hpp — lesson 2, exercise 4: a two-fiber pipeline that is right only in FIFO order.
//
// run_pipeline(inputs) spawns a producer, which turns each input into an item
// (twice the input) and appends it to `items`, one per turn, and a consumer,
// which takes item i at its turn i. It returns what the consumer took.
//
// In FIFO order the producer is spawned first, so it always runs first and the
// item is there when the consumer looks. Nothing promises that order: under
// FIB_SCHEDULE_SEED the consumer can have its turn before the producer has had
// its own, and it takes -1, "no item yet".
//
// To do: make the consumer wait for item i instead of assuming it is there,
// with lesson 2's tools only, so that every schedule gives the same result.
#pragma once

#include <cstddef>
#include <vector>

#include "fib/fiber.hpp"
#include "fib/fiber_manager.hpp"

inline std::vector<int> run_pipeline(const std::vector<int>& inputs) {
    std::vector<int> items;
    std::vector<int> taken;
    fib::Fiber producer({.name = "producer"}, [&] {
        for (int input : inputs) {
            items.push_back(2 * input);
            fib::this_fiber::yield();
        }
    });
    fib::Fiber consumer({.name = "consumer"}, [&] {
        for (std::size_t i = 0; i < inputs.size(); ++i) {
            taken.push_back(i < items.size() ? items[i] : -1);
            fib::this_fiber::yield();
        }
    });
    producer.join();
    consumer.join();
    return taken;
}
