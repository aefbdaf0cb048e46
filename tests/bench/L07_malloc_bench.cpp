// L07_malloc_bench.cpp — make bench, lesson 7: what a fresh TLS block costs malloc: an arena and a tcache.
//
// libc's TLS image has no malloc arena and no per-thread cache (tcache): a
// fiber on a fresh block that mallocs makes malloc do what it does for a new
// thread, pick an arena (a new one while there are fewer than 8 per core) and
// allocate a tcache in it. tls_block_bytes (L07_tls_bench.cpp) counts neither.
// Each repetition runs in a child process of its own, so that the first TLS
// fiber there is the first of the process:
//
//   arenas_first_tls_malloc        malloc's arenas once the first fiber on a
//                                  fresh block has malloc'd (1 before it)
//   system_bytes_first_tls_malloc  growth of the bytes malloc holds from the
//                                  system (every arena's heap, and mmapped chunks)
//                                  as that fiber mallocs 64 bytes
//   tls_block_bytes_malloc         heap bytes per fiber, 1,000 fibers alive at
//                                  once that each malloc and free 64 bytes:
//                                  with FiberTls minus without (block + tcache)
//   arenas_1000_tls_fibers         arenas once those 1,000 fibers have malloc'd
//   tls_bytes_left_per_block       heap bytes still in use per block after the
//                                  FiberTls has gone: what a block's tcache keeps
#include <malloc.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "bench.hpp"
#include "fib/fiber.hpp"
#include "fib/fiber_tls.hpp"
#include "fib/intrusive_list.hpp"

namespace bench {
namespace {

constexpr int kChildren = 5;
constexpr long kAliveFibers = 1'000;

// The arenas malloc has now: malloc_info writes one <heap nr="..."> per arena.
long arena_count() {
    char* text = nullptr;
    std::size_t size = 0;
    FILE* stream = open_memstream(&text, &size);
    malloc_info(0, stream);
    std::fclose(stream);
    long count = 0;
    for (const char* at = text; (at = std::strstr(at, "<heap nr=")); ++at) ++count;
    std::free(text);
    return count;
}

// Bytes malloc holds from the system, and bytes it has handed out: every arena.
long system_bytes() {
    const struct mallinfo2 info = mallinfo2();
    return static_cast<long>(info.arena + info.hblkhd);
}
long heap_in_use() {
    const struct mallinfo2 info = mallinfo2();
    return static_cast<long>(info.uordblks + info.hblkhd);
}

void malloc_and_free() {
    void* memory = std::malloc(64);
    asm volatile("" : : "r"(memory) : "memory");  // keep the malloc/free pair
    std::free(memory);
}

// The heap in use while `count` fibers that have each malloc'd are all parked.
long heap_with_fibers_parked(fib::FiberManager& manager, long count) {
    fib::IntrusiveList<fib::FiberRecord, &fib::FiberRecord::queue_link> parked;
    for (long i = 0; i < count; ++i)
        fib::Fiber([&manager, &parked] {
            malloc_and_free();
            parked.push_back(manager.running());
            manager.park(manager.begin_wait(), fib::WaitSite{"bench: parked", nullptr, &parked});
        }).detach();
    manager.yield();
    const long in_use = heap_in_use();
    // Each fiber on the list is parked in its one wait: wake that one.
    while (fib::FiberRecord* fiber = parked.pop_front()) manager.wake({fiber, fiber->waits});
    manager.wait_for_all();
    return in_use;
}

enum Measure { kArenasFirst, kSystemGrowthFirst, kPerFiber, kArenasAlive, kLeftPerBlock, kMeasures };

// One child's measurements, in the order of Measure.
std::array<double, kMeasures> measure_in_this_process() {
    std::array<double, kMeasures> result{};
    fib::FiberManager manager;
    {
        fib::FiberTls tls(manager);
        fib::Fiber([] {}).join();  // the fresh block is made; nothing is malloc'd on it
        const long system_before = system_bytes();
        fib::Fiber(malloc_and_free).join();  // the same block: its first malloc
        result[kArenasFirst] = static_cast<double>(arena_count());
        result[kSystemGrowthFirst] = static_cast<double>(system_bytes() - system_before);
    }
    const long before = heap_in_use();
    const long without_tls = heap_with_fibers_parked(manager, kAliveFibers) - before;
    std::optional<fib::FiberTls> tls(std::in_place, manager);
    const long with_tls = heap_with_fibers_parked(manager, kAliveFibers) - before;
    result[kPerFiber] = static_cast<double>(with_tls - without_tls) / kAliveFibers;
    result[kArenasAlive] = static_cast<double>(arena_count());
    tls.reset();
    result[kLeftPerBlock] = static_cast<double>(heap_in_use() - before) / kAliveFibers;
    return result;
}

// Runs measure_in_this_process in a child and reads its results back.
std::array<double, kMeasures> measure_in_a_child() {
    std::array<double, kMeasures> result{};
    int pipe_ends[2];
    if (pipe(pipe_ends) != 0) std::abort();
    const pid_t child = fork();
    if (child == 0) {
        close(pipe_ends[0]);
        const std::array<double, kMeasures> measured = measure_in_this_process();
        const bool written = write(pipe_ends[1], measured.data(), sizeof measured) == sizeof measured;
        _exit(written ? 0 : 1);
    }
    close(pipe_ends[1]);
    const bool read_all = read(pipe_ends[0], result.data(), sizeof result) == sizeof result;
    close(pipe_ends[0]);
    int status = 0;
    waitpid(child, &status, 0);
    if (!read_all || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        std::fprintf(stderr, "bench: the malloc measurement's child failed\n");
        std::exit(1);
    }
    return result;
}

Figure figure_of(const char* name, const std::vector<double>& values, const char* unit,
                 const std::string& compared) {
    Figure figure{name, summarize(values), unit};
    figure.repetitions = kChildren;
    figure.compared = compared;
    return figure;
}

void malloc_costs(std::vector<Figure>& figures) {
    std::array<std::vector<double>, kMeasures> values;
    for (int i = 0; i < kChildren; ++i) {
        const std::array<double, kMeasures> measured = measure_in_a_child();
        for (int m = 0; m < kMeasures; ++m) values[m].push_back(measured[m]);
    }
    const std::string alive = std::to_string(kAliveFibers) + " fibers alive, each malloc'd";
    figures.push_back(figure_of("arenas_first_tls_malloc", values[kArenasFirst], "arenas",
                                "1 before the first TLS fiber's malloc"));
    figures.push_back(figure_of("system_bytes_first_tls_malloc", values[kSystemGrowthFirst],
                                "bytes", "one malloc(64) on a fresh block"));
    figures.push_back(figure_of("tls_block_bytes_malloc", values[kPerFiber], "bytes",
                                alive + ": heap with FiberTls minus without"));
    figures.push_back(figure_of("arenas_1000_tls_fibers", values[kArenasAlive], "arenas", alive));
    figures.push_back(figure_of("tls_bytes_left_per_block", values[kLeftPerBlock], "bytes",
                                "heap in use after the FiberTls, per block it made"));
}

// Forks: measured before any section has started a thread.
[[maybe_unused]] const bool registered = add(Section{"tls_malloc", 7, true, malloc_costs});

}  // namespace
}  // namespace bench
