// message_pool.cpp — lesson 4: fills echo_load's pool of random bytes, the same in every run.
#include "message_pool.hpp"

#include <cstring>
#include <random>

namespace {

constexpr std::size_t kPoolBytes = 4 << 20;

}  // namespace

MessagePool::MessagePool(std::size_t message_size)
    : bytes_(kPoolBytes), starts_(kPoolBytes - message_size + 1) {
    std::mt19937_64 random(20240501);
    for (std::size_t at = 0; at < kPoolBytes; at += 8) {
        const std::uint64_t word = random();
        std::memcpy(&bytes_[at], &word, 8);
    }
}
