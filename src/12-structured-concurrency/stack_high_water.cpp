// stack_high_water.cpp — lesson 12: finding a stack's deepest written word, and erasing what a fiber used.
#include "fib/stack_high_water.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "fib/fiber_manager.hpp"

namespace fib {
namespace {

thread_local unsigned high_water_scopes = 0;  // StackHighWaterScopes living on this thread

// The first non-zero word of one page, or nullptr. Eight words (a cache line)
// at a time: or-ing them is one test per line on the usual all-zero page.
// The scan reads below a running fiber's rsp too, where AddressSanitizer keeps
// red zones poisoned: it must not check these reads (make SAN=1).
__attribute__((no_sanitize("address"))) const std::uint64_t* first_written_word(const char* page_start, std::size_t page) {
    const auto* word = reinterpret_cast<const std::uint64_t*>(page_start);
    const auto* end = word + page / sizeof *word;
    for (; word < end; word += 8) {
        const std::uint64_t line =
            word[0] | word[1] | word[2] | word[3] | word[4] | word[5] | word[6] | word[7];
        if (line == 0) continue;
        while (*word == 0) ++word;
        return word;
    }
    return nullptr;
}

// The deepest non-zero word of the stack, or top() if there is none. Pages are
// asked about in batches (one mincore() call covers a 64 KiB stack); a page
// mincore() says is not resident was never touched and reads as zeros. If
// mincore() fails, every page is read.
const char* deepest_written(const Stack& stack) {
    const std::size_t page = page_size();
    constexpr std::size_t kBatch = 64;  // pages per mincore() call
    unsigned char resident[kBatch];
    const char* top = static_cast<const char*>(stack.top());
    for (const char* batch = static_cast<const char*>(stack.bottom()); batch < top;
         batch += kBatch * page) {
        const std::size_t pages = std::min<std::size_t>(kBatch, (top - batch) / page);
        if (mincore(const_cast<char*>(batch), pages * page, resident) != 0)
            std::memset(resident, 1, pages);
        for (std::size_t i = 0; i < pages; ++i) {
            if (!(resident[i] & 1)) continue;
            if (const std::uint64_t* word = first_written_word(batch + i * page, page))
                return reinterpret_cast<const char*>(word);
        }
    }
    return top;
}

}  // namespace

std::size_t stack_high_water(const Stack& stack) {
    if (!stack) return 0;
    return static_cast<const char*>(stack.top()) - deepest_written(stack);
}

std::size_t stack_high_water(const FiberRecord& fiber) { return stack_high_water(fiber.stack); }

std::size_t stack_reserved(const FiberRecord& fiber) { return fiber.stack.size(); }

namespace this_fiber {

std::size_t stack_high_water() {
    FiberManager* manager = FiberManager::current();
    return manager ? fib::stack_high_water(*manager->running()) : 0;
}

}  // namespace this_fiber

StackHighWaterScope::StackHighWaterScope() { ++high_water_scopes; }
StackHighWaterScope::~StackHighWaterScope() { --high_water_scopes; }
bool StackHighWaterScope::active() { return high_water_scopes != 0; }

std::size_t erase_stack_use(const Stack& stack) {
    if (!stack) return 0;
    char* deepest = const_cast<char*>(deepest_written(stack));
    const std::size_t used = static_cast<char*>(stack.top()) - deepest;
    std::memset(deepest, 0, used);
    return used;
}

}  // namespace fib
