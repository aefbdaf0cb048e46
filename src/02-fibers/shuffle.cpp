// shuffle.cpp — lesson 2: reading FIB_SCHEDULE_SEED, and the shuffled take from the ready queue.
#include "fib/shuffle.hpp"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <mutex>

#include "fib/fatal.hpp"
#include "fib/fiber_manager.hpp"

namespace fib {

bool schedule_seed(std::uint64_t* seed) {
    const char* text = std::getenv("FIB_SCHEDULE_SEED");
    if (!text) return false;
    char* end = nullptr;
    errno = 0;
    unsigned long long value = std::strtoull(text, &end, 10);
    if (*text < '0' || *text > '9' || *end != '\0' || errno == ERANGE)
        fatal("FIB_SCHEDULE_SEED=%s is not a seed; give a number, such as FIB_SCHEDULE_SEED=1", text);
    *seed = value;
    // Say it once per seed, not once per manager: a test binary creates
    // thousands of managers, and the line is there to make a run reproducible.
    static std::mutex printed_mutex;
    static bool printed = false;
    static std::uint64_t printed_seed = 0;
    std::lock_guard<std::mutex> lock(printed_mutex);
    if (!printed || printed_seed != value) {
        std::fprintf(stderr,
                     "fib: FIB_SCHEDULE_SEED=%llu: the ready queue hands out fibers in a shuffled "
                     "order\n",
                     value);
        printed = true;
        printed_seed = value;
    }
    return true;
}

std::uint64_t next_random(std::uint64_t& state) {
    std::uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

// One of the first kWindow fibers of the queue, each as likely as the others,
// rather than the front. Every ready fiber gets its turn (each take moves the
// ones behind forward), and within the window any order can turn up; walking
// the whole queue instead would cost a cache miss per fiber on every switch,
// which makes a test with thousands of spinning fibers take minutes.
FiberRecord* FiberManager::take_shuffled() {
    constexpr std::size_t kWindow = 32;
    if (ready_.empty()) return nullptr;
    const std::size_t span = ready_.size() < kWindow ? ready_.size() : kWindow;
    std::size_t skip = next_random(shuffle_state_) % span;
    FiberRecord* fiber = ready_.front();
    while (skip-- > 0) fiber = ready_.next(fiber);
    ready_.remove(fiber);
    return fiber;
}

}  // namespace fib
