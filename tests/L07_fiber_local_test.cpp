// L07_fiber_local_test.cpp — lesson 7: fib::fiber_local<T>, one copy per fiber through %gs. Each
// fiber's copy starts at the declared value and is its own; libc's TLS (errno, a thread_local) is
// untouched by it in both FiberTls modes; a copy with a destructor is made as its fiber starts and
// destroyed as its function ends; a recycled block starts over; a std::thread gets a block of its
// own instead of its creator's; get(), * and -> reach one object.
#include <gtest/gtest.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "L02_schedule.hpp"
#include "fib/fiber.hpp"
#include "fib/fiber_local.hpp"
#include "fib/fiber_tls.hpp"

namespace {

// fiber_locals live at namespace scope: the layout of every block is fixed by the first one.
fib::fiber_local<int> counter{7};
fib::fiber_local<std::string> greeting{"hello"};

// An over-aligned type: every block, and every copy in it, must honour its alignment.
struct alignas(64) Aligned {
    int value = 1;
};
fib::fiber_local<Aligned> aligned;

// A plain thread_local of the executable, to tell libc's TLS (%fs) from the fiber_locals (%gs).
thread_local int plain_tls = 0;

// Counts the life of each copy, and records on which fiber each one was made and destroyed. Every
// block of every test makes a copy: only the test that reads the records keeps them, or they
// would grow with each fiber of tests/L07_memory_test.cpp's RSS run.
struct Tracked {
    static inline bool recording = false;
    static inline std::vector<std::uint64_t> made_on, destroyed_on;  // fiber ids
    int value;
    explicit Tracked(int v) : value(v) {}
    Tracked(const Tracked& other) : value(other.value) {
        if (recording) made_on.push_back(fib::this_fiber::id());
    }
    Tracked& operator=(const Tracked&) = delete;
    ~Tracked() {
        if (recording) destroyed_on.push_back(fib::this_fiber::id());
    }
    static std::size_t copies() { return made_on.size(); }
    static std::size_t destroyed() { return destroyed_on.size(); }
};
fib::fiber_local<Tracked> tracked{5};

// Three fibers and main change their copies in turns, yielding after each change: the log of who
// ran proves the turns interleaved, and every copy holds only its owner's changes.
TEST(L07_FiberLocal, EachFiberHasItsOwnCopyStartingAtTheDeclaredValue) {
    EXPECTS_FIFO_ORDER();
    fib::FiberManager manager;
    fib::FiberTls tls(manager);
    EXPECT_EQ(*counter, 7);
    EXPECT_EQ(*greeting, "hello");
    *counter = 1000;
    std::vector<std::uint64_t> log;
    std::vector<fib::Fiber> fibers;
    for (int i = 1; i <= 3; ++i)
        fibers.emplace_back([&log, i] {
            EXPECT_EQ(*counter, 7) << "fiber " << i;
            EXPECT_EQ(*greeting, "hello") << "fiber " << i;
            for (int round = 0; round < 5; ++round) {
                *counter += i;
                greeting->append(std::to_string(i));
                log.push_back(fib::this_fiber::id());
                fib::this_fiber::yield();
            }
            EXPECT_EQ(*counter, 7 + 5 * i) << "fiber " << i;
            EXPECT_EQ(*greeting, "hello" + std::string(5, static_cast<char>('0' + i)));
        });
    for (int round = 0; round < 5; ++round) {
        *counter += 100;
        log.push_back(fib::this_fiber::id());
        fib::this_fiber::yield();
    }
    for (fib::Fiber& fiber : fibers) fiber.join();
    std::vector<std::uint64_t> expected;
    for (int round = 0; round < 5; ++round) expected.insert(expected.end(), {0, 1, 2, 3});
    EXPECT_EQ(log, expected);
    EXPECT_EQ(*counter, 1500);
    EXPECT_EQ(*greeting, "hello");
}

// A fiber writes errno and a thread_local and calls into libc (stdio, malloc, strerror) while
// main waits in a yield. Whether those are the fiber's own (thread_locals on) or main's
// (thread_locals off), no fiber_local value changes, and each side keeps its own fiber_locals.
void libc_leaves_fiber_locals_alone(bool thread_locals) {
    fib::FiberManager manager;
    fib::FiberTls tls(manager, {.thread_locals = thread_locals, .fiber_locals = true});
    plain_tls = 5;
    errno = 0;
    *counter = 1;
    const int* main_errno = &errno;
    const int* fiber_errno = nullptr;
    int seen_plain = -1, seen_errno = -1;
    fib::Fiber fiber([&] {
        seen_plain = plain_tls;
        seen_errno = errno;
        fiber_errno = &errno;
        *counter = 42;
        *greeting = "fiber";
        plain_tls = 6;
        errno = EDOM;
        char text[64];
        std::snprintf(text, sizeof text, "%d %s", *counter, greeting->c_str());
        if (FILE* null = std::fopen("/dev/null", "w")) {
            std::fprintf(null, "%s %s\n", text, std::strerror(ENOENT));
            std::fclose(null);
        }
        char* copy = static_cast<char*>(std::malloc(sizeof text));
        std::strcpy(copy, text);
        EXPECT_STREQ(copy, "42 fiber");
        std::free(copy);
        errno = EDOM;  // fopen/fclose may have set it
        fib::this_fiber::yield();
        EXPECT_EQ(*counter, 42);
        EXPECT_EQ(*greeting, "fiber");
        EXPECT_EQ(errno, EDOM);
    });
    fib::this_fiber::yield();  // the fiber runs to its yield
    const int errno_now = errno;  // read at once: main's errno, or the shared one
    const int plain_now = plain_tls;
    EXPECT_EQ(*counter, 1);
    EXPECT_EQ(*greeting, "hello");
    fiber.join();
    // thread_locals on: the fiber's own errno and thread_local, from the image; off: main's.
    EXPECT_EQ(fiber_errno == main_errno, !thread_locals);
    EXPECT_EQ(seen_plain, thread_locals ? 0 : 5);
    EXPECT_EQ(seen_errno, 0);
    EXPECT_EQ(errno_now, thread_locals ? 0 : EDOM);
    EXPECT_EQ(plain_now, thread_locals ? 5 : 6);
}

TEST(L07_FiberLocal, FiberLocalsOnlyLeaveErrnoAndThreadLocalsSharedWithMain) {
    libc_leaves_fiber_locals_alone(false);
}

TEST(L07_FiberLocal, WithThreadLocalsTooLibcCallsLeaveFiberLocalsAlone) {
    libc_leaves_fiber_locals_alone(true);
}

// Main's copy is made by FiberTls; each fiber's on the fiber as it starts (not when it is
// created), and destroyed on the fiber as its function ends, before anyone joins it.
TEST(L07_FiberLocal, CopyIsConstructedAtFiberStartAndDestroyedAtFunctionEndOncePerFiber) {
    EXPECTS_FIFO_ORDER();
    Tracked::made_on.clear();
    Tracked::destroyed_on.clear();
    Tracked::recording = true;
    {
        fib::FiberManager manager;
        fib::FiberTls tls(manager);
        EXPECT_EQ(Tracked::copies(), 1u) << "main's copy";
        std::vector<fib::Fiber> fibers;
        std::vector<std::size_t> copies_seen;
        for (int i = 0; i < 3; ++i)
            fibers.emplace_back([&copies_seen, i] {
                copies_seen.push_back(Tracked::copies());
                tracked->value += i;
                fib::this_fiber::yield();
                EXPECT_EQ(tracked->value, 5 + i);
                EXPECT_EQ(Tracked::destroyed(), static_cast<std::size_t>(i)) << "destroyed only as each function ends";
            });
        EXPECT_EQ(Tracked::copies(), 1u) << "a created fiber has no copy yet";
        fib::this_fiber::yield();  // all three start and yield
        EXPECT_EQ(copies_seen, (std::vector<std::size_t>{2, 3, 4}));
        EXPECT_EQ(Tracked::destroyed(), 0u);
        fib::this_fiber::yield();  // all three end, none joined yet
        EXPECT_EQ(Tracked::destroyed(), 3u);
        for (fib::Fiber& fiber : fibers) fiber.join();
        EXPECT_EQ(Tracked::copies(), 4u);
        EXPECT_EQ(Tracked::destroyed(), 3u) << "join destroys nothing more";
        EXPECT_EQ(tracked->value, 5);
    }
    Tracked::recording = false;
    EXPECT_EQ(Tracked::destroyed(), 4u) << "main's copy goes with the FiberTls";
    EXPECT_EQ(Tracked::made_on, (std::vector<std::uint64_t>{0, 1, 2, 3}));
    EXPECT_EQ(Tracked::destroyed_on, (std::vector<std::uint64_t>{1, 2, 3, 0}));
}

// The second fiber gets the first one's block back (same address, no new block made), and its
// copies start at the initial values again, not at what the first fiber left.
TEST(L07_FiberLocal, RecycledBlockStartsFromTheInitialValueAgain) {
    fib::FiberManager manager;
    fib::FiberTls tls(manager);
    struct Seen {
        const int* address;
        int value;
        std::string greeting;
    };
    std::vector<Seen> seen;
    for (int i = 0; i < 2; ++i)
        fib::Fiber([&seen] {
            seen.push_back({&*counter, *counter, *greeting});
            *counter = 99;
            *greeting = "changed";
        }).join();
    ASSERT_EQ(seen.size(), 2u);
    EXPECT_EQ(seen[1].address, seen[0].address) << "the block was recycled";
    EXPECT_EQ(tls.stats().local_blocks_created, 2u) << "main's and the one the fibers share";
    for (const Seen& fiber : seen) {
        EXPECT_EQ(fiber.value, 7);
        EXPECT_EQ(fiber.greeting, "hello");
    }
}

// What a std::thread saw of `counter`: its first read, three reads after its own write, and its
// copy's address. It must be a block of its own: the initial value, not its creator's copy.
struct ThreadView {
    int first = -1;
    std::vector<int> reads;
    const int* address = nullptr;
};
ThreadView look_from_a_thread() {
    ThreadView view;
    std::thread thread([&view] {
        view.first = *counter;
        *counter = 3;
        for (int i = 0; i < 3; ++i) view.reads.push_back(*counter);
        view.address = &*counter;
    });
    thread.join();
    return view;
}
void expect_a_block_of_its_own(const ThreadView& view, const int* creators_copy) {
    EXPECT_EQ(view.first, 7);
    EXPECT_EQ(view.reads, (std::vector<int>{3, 3, 3}));
    EXPECT_NE(view.address, creators_copy);
}

// A new thread inherits its creator's %gs base: it must not use the fiber's block through it.
TEST(L07_FiberLocal, ThreadStartedFromAFiberDoesNotInheritItsBlock) {
    fib::FiberManager manager;
    fib::FiberTls tls(manager);
    ThreadView view;
    const int* fiber_copy = nullptr;
    int after = 0;
    fib::Fiber fiber([&] {
        *counter = 55;
        fiber_copy = &*counter;
        view = look_from_a_thread();
        after = *counter;
    });
    fiber.join();
    expect_a_block_of_its_own(view, fiber_copy);
    EXPECT_EQ(after, 55) << "the fiber's copy is unchanged";
}

TEST(L07_FiberLocal, ThreadStartedFromMainDoesNotInheritMainsBlock) {
    fib::FiberManager manager;
    fib::FiberTls tls(manager);
    *counter = 77;
    expect_a_block_of_its_own(look_from_a_thread(), &*counter);
    EXPECT_EQ(*counter, 77);
}

// Two fibers alive at once (so neither can have the other's recycled block) and main: three
// distinct copies, each reached alike by get(), * and ->, and each aligned as its type asks.
TEST(L07_FiberLocal, GetStarAndArrowReachOneObjectWhoseAddressDiffersPerFiber) {
    fib::FiberManager manager;
    fib::FiberTls tls(manager);
    std::vector<const std::string*> addresses;
    auto record = [&addresses] {
        const std::string* by_get = &greeting.get();
        EXPECT_EQ(by_get, &*greeting);
        EXPECT_EQ(by_get, greeting.operator->());
        EXPECT_EQ(&counter.get(), &*counter);
        EXPECT_EQ(reinterpret_cast<std::uintptr_t>(&*aligned) % 64, 0u);
        EXPECT_EQ(aligned->value, 1);
        addresses.push_back(by_get);
    };
    record();
    fib::Fiber a([&] { record(); fib::this_fiber::yield(); });
    fib::Fiber b([&] { record(); fib::this_fiber::yield(); });
    a.join();
    b.join();
    ASSERT_EQ(addresses.size(), 3u);
    EXPECT_NE(addresses[0], addresses[1]);
    EXPECT_NE(addresses[0], addresses[2]);
    EXPECT_NE(addresses[1], addresses[2]);
}

}  // namespace
