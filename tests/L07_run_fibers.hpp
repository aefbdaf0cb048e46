// L07_run_fibers.hpp — lesson 7 tests: run n fibers of one body and join them all.
#pragma once

#include <vector>

#include "fib/fiber.hpp"

namespace l06 {

// Runs body(0), ..., body(n - 1), each on a fiber of its own, in that order
// (each until it yields), and joins them all.
template <class Body>
void run_fibers(int n, Body body) {
    std::vector<fib::Fiber> fibers;
    for (int i = 0; i < n; ++i) fibers.emplace_back(body, i);
    for (fib::Fiber& fiber : fibers) fiber.join();
}

}  // namespace l06
