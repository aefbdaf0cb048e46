// message_pool.hpp — lesson 4: echo_load's messages: windows of one pool of random bytes.
//
// Message k of connection c starts at an offset hashed from (c, k). The sender
// and the checker compute the same window, so nothing is stored per message,
// and a byte from another message or another connection's stream (almost
// surely) differs from the one expected.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

class MessagePool {
public:
    // 4 MiB of random bytes, the same in every run; messages are up to 1 MiB.
    explicit MessagePool(std::size_t message_size);

    const unsigned char* message(std::uint32_t connection, std::uint64_t index) const {
        return bytes_.data() + mix(mix(connection) + index) % starts_;
    }

private:
    // splitmix64's finalizer: spreads (connection, message) pairs over the pool.
    static std::uint64_t mix(std::uint64_t value) {
        value = (value ^ (value >> 30)) * 0xbf58476d1ce4e5b9;
        value = (value ^ (value >> 27)) * 0x94d049bb133111eb;
        return value ^ (value >> 31);
    }

    std::vector<unsigned char> bytes_;
    std::size_t starts_;  // offsets a message can start at
};
