// L01_emulator.hpp — lesson 1 tests: whether the test binary runs under qemu-user, which
// `make ARCH=aarch64 test-lessonN` uses on an x86-64 machine, for the few tests that
// cannot run there. Each says why where it skips.
//
// qemu-user runs the program inside its own process: /proc/self/comm names qemu
// (qemu-aarch64) when make starts it by hand; started through binfmt_misc, the name is
// the program's own, but /proc/cpuinfo is still the host's, which an AArch64 machine's
// never is (it has no "vendor_id" line).
#pragma once

#include <gtest/gtest.h>

#include <fstream>
#include <string>

namespace l01 {

inline bool under_emulator() {
    static const bool emulated = [] {
        std::ifstream comm("/proc/self/comm");
        std::string name;
        std::getline(comm, name);
        if (name.rfind("qemu-", 0) == 0) return true;
#if defined(__aarch64__)
        std::ifstream cpuinfo("/proc/cpuinfo");
        for (std::string line; std::getline(cpuinfo, line);)
            if (line.rfind("vendor_id", 0) == 0) return true;
#endif
        return false;
    }();
    return emulated;
}

}  // namespace l01

#define SKIP_UNDER_EMULATOR(why) \
    if (l01::under_emulator()) GTEST_SKIP() << "left out under qemu-user (make ARCH=aarch64): " << (why)
