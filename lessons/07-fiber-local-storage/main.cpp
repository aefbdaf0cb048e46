// main.cpp — lesson 7 demo: fib::fiber_local, thread_locals and errno per fiber, with and without a FiberTls.
//
// Fibers a, b and c take turns with yield(). First each gets a fiber_local
// block through %gs while libc's TLS stays the thread's. Then the TLS
// segments the library read from the program headers, the layout every
// fiber's TLS block copies; and the fibers again, first as in lessons 2-6,
// all on the thread's one TLS block, then with a FiberTls, which gives each a
// block of its own. Every line is decided by the order in which the fibers
// run, except the segment table (its numbers depend on the build) and the
// last line (it depends on the machine, and on FIB_TLS_SWITCH).
#include <fcntl.h>
#include <malloc.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>

#include "fib/fiber.hpp"
#include "fib/fiber_local.hpp"
#include "fib/fiber_tls.hpp"
#include "fib/tls_segments.hpp"

namespace {

// The executable's own thread_local: g++ compiles it as %fs:-offset, a fixed
// distance below whatever block the %fs base points at.
thread_local int counter = 0;

// One copy per fiber, reached through %gs. Declared at namespace scope: the
// layout of fiber-local blocks is fixed when the first one is made.
fib::fiber_local<int> visits{0};

// The segments, one line each. A module's name is its path; the executable's is "".
void print_segments() {
    std::puts("TLS segments, from the PT_TLS program headers (the numbers depend on the build):");
    std::puts("  module           filesz   memsz  align  offset below tp");
    bool libc_has_own = false;
    for (const fib::TlsSegment& segment : fib::tls_segments()) {
        const char* slash = std::strrchr(segment.module, '/');
        const char* name = segment.module[0] == '\0' ? "(executable)" : slash ? slash + 1 : segment.module;
        std::printf("  %-16s %6zu %7zu %6zu %16zu%s\n", name, segment.image_size, segment.size,
                    segment.align, segment.offset, segment.c_library ? "   <- libc's: errno is here" : "");
        libc_has_own |= segment.c_library;
    }
    if (!libc_has_own) std::puts("  (linked statically: libc's thread_locals, errno too, are the executable's)");
}

// Runs body(0), body(1), body(2) on fibers a, b and c of a manager of its own,
// with a FiberTls when options are given, and joins them. Fibers run in the
// order they were spawned, each until it yields.
template <class Body>
void run_three(const char* title, std::optional<fib::FiberTlsOptions> options, Body body) {
    std::printf("  %s\n", title);
    fib::FiberManager manager;
    std::optional<fib::FiberTls> tls;
    if (options) tls.emplace(manager, *options);
    fib::Fiber a({.name = "a"}, body, 0);
    fib::Fiber b({.name = "b"}, body, 1);
    fib::Fiber c({.name = "c"}, body, 2);
    a.join();
    b.join();
    c.join();
}

// Part 1: add 1 to the thread_local three times, yielding after each step,
// then read it once more after the others' last steps.
void count(int) {
    int seen[3];
    for (int& value : seen) {
        value = ++counter;
        fib::this_fiber::yield();
    }
    std::printf("    %s counted %d %d %d, then read %d\n", fib::this_fiber::name(), seen[0], seen[1],
                seen[2], counter);
}

// Part 2: three calls that fail, each in its own way, setting errno.
constexpr const char* kFailingCall[] = {"close(-1)", "open(missing file)", "strtol(overflow)"};

int fail(int index) {
    if (index == 0) {
        ::close(-1);  // EBADF
    } else if (index == 1) {
        if (const int fd = ::open("/nonexistent-lesson6/file", O_RDONLY); fd >= 0) ::close(fd);  // ENOENT
    } else {
        [[maybe_unused]] const long value = std::strtol("99999999999999999999999", nullptr, 10);  // ERANGE
    }
    return errno;
}

// Fail, yield while the other fibers fail in their ways, then read errno. The
// second yield lets every fiber read before any fiber prints, so nothing but
// the failing calls has written errno in between.
struct ErrnoSeen {
    int set;
    int read;
};

ErrnoSeen fail_and_yield(int index) {
    const int set = fail(index);
    fib::this_fiber::yield();
    const int read = errno;
    fib::this_fiber::yield();
    return {set, read};
}

void report_errno(int index) {
    const ErrnoSeen errors = fail_and_yield(index);
    std::printf("    %s: %-18s set %-6s and read %s after yielding\n", fib::this_fiber::name(),
                kFailingCall[index], strerrorname_np(errors.set), strerrorname_np(errors.read));
}

// Part 3: with fiber_locals only, visits is per fiber, while everything that
// lives in %fs's block, our thread_local and libc's errno alike, is the
// thread's: what libraries see does not change.
void count_both(int index) {
    for (int round = 0; round < 3; ++round) {
        ++*visits;
        ++counter;
        fib::this_fiber::yield();
    }
    const ErrnoSeen errors = fail_and_yield(index);
    std::printf("    %s: fiber_local %d, thread_local %d; errno set %-6s and read %s\n",
                fib::this_fiber::name(), *visits, counter, strerrorname_np(errors.set),
                strerrorname_np(errors.read));
}

// Part 4: a thread_local object with a destructor. A fiber constructs its own
// at first use; the FiberTls destroys it as the fiber's function ends, as a
// thread's exit would (glibc's __call_tls_dtors), on the fiber itself.
struct Note {
    std::uint64_t made_in = fib::this_fiber::id();
    ~Note() {
        std::printf("    the Note made in fiber %llu is destroyed in fiber %llu\n",
                    static_cast<unsigned long long>(made_in),
                    static_cast<unsigned long long>(fib::this_fiber::id()));
    }
};
thread_local Note note;

void use_note() {
    std::printf("    fiber %llu made its Note\n", static_cast<unsigned long long>(note.made_in));
    fib::this_fiber::yield();
}

// malloc's arenas, as malloc_info counts them (one <heap> element each), and
// the memory they took from the system, at the start of main.
long malloc_arenas() {
    char* text = nullptr;
    std::size_t size = 0;
    std::FILE* stream = open_memstream(&text, &size);
    malloc_info(0, stream);
    std::fclose(stream);
    long arenas = 0;
    for (const char* at = text; (at = std::strstr(at, "<heap nr=")) != nullptr; ++at) ++arenas;
    std::free(text);
    return arenas;
}
long arenas_at_start = 0;
std::size_t system_bytes_at_start = 0;

// Two waves of two fibers: the second wave runs on the first wave's blocks,
// reset to the segments' images, so its Notes are constructed afresh.
void destructors_and_stats() {
    fib::FiberManager manager;
    fib::FiberTls tls(manager);
    for (int wave = 1; wave <= 2; ++wave) {
        std::printf("  wave %d\n", wave);
        fib::Fiber first(use_note);
        fib::Fiber second(use_note);
        first.join();
        second.join();
    }
    const fib::FiberTlsStats stats = tls.stats();
    std::printf("  FiberTls stats: %llu fibers ran on %zu TLS blocks (%zu back in the pool); "
                "%zu fiber_local blocks, main's included\n",
                static_cast<unsigned long long>(manager.stats().spawned), stats.tls_blocks_created,
                stats.tls_blocks_pooled, stats.local_blocks_created);
    // malloc takes a fresh block for a new thread: registering a Note's
    // destructor is the first malloc on each, which makes malloc's per-thread
    // cache and, below malloc's limit of 8 arenas per core, a new arena.
    std::printf("  malloc arenas: %ld at start, %ld now; their memory from the system: %zu KiB, "
                "then %zu KiB\n",
                arenas_at_start, malloc_arenas(), system_bytes_at_start / 1024,
                mallinfo2().arena / 1024);
#if defined(__aarch64__)
    // AArch64 has one way: msr, and a store for the fiber_local block.
    std::printf("  its switch writes tpidr_el0 with msr and stores the fiber_local block\n");
#else
    // This line depends on the CPU and kernel (FSGSBASE, Linux 5.9+), and says
    // arch_prctl under FIB_TLS_SWITCH=arch_prctl.
    std::printf("  its switch writes %%fs/%%gs with %s\n",
                stats.fsgsbase ? "wrfsbase/wrgsbase" : "arch_prctl(2), a system call");
#endif
}

}  // namespace

int main() {
    arenas_at_start = malloc_arenas();
    system_bytes_at_start = mallinfo2().arena;
    std::puts("Part 1: fib::fiber_local<int> beside a thread_local, a yield after each step");
    run_three("FiberTlsOptions{.thread_locals = false, .fiber_locals = true}",
              fib::FiberTlsOptions{.thread_locals = false, .fiber_locals = true}, count_both);

    std::puts("");
    print_segments();
    counter = 0;  // the thread's, which Part 1's fibers shared

    std::puts("\nPart 2: a thread_local counter, three fibers, a yield after each step");
    run_three("without a FiberTls: one TLS block, one counter", std::nullopt, count);
    run_three("with a FiberTls: a TLS block per fiber, starting from the image", fib::FiberTlsOptions{},
              count);
    std::printf("  main's counter still reads %d: main keeps the thread's block\n", counter);

    std::puts("\nPart 3: errno, set by each fiber, read after the others set theirs");
    run_three("without a FiberTls: the last write wins", std::nullopt, report_errno);
    run_three("with a FiberTls: each fiber's own", fib::FiberTlsOptions{}, report_errno);

    std::puts("\nPart 4: destructors of thread_locals run as each fiber ends");
    destructors_and_stats();
    return 0;
}
