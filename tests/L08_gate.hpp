// L08_gate.hpp — lesson 8 tests: a gate that offloaded work waits at until the test opens it.
#pragma once

#include <atomic>

namespace l08 {

// Workers block on it in the kernel (a futex), not in a spin.
struct Gate {
    std::atomic<bool> open{false};
    void wait() {
        while (!open.load()) open.wait(false);
    }
    void release() {
        open = true;
        open.notify_all();
    }
};

}  // namespace l08
