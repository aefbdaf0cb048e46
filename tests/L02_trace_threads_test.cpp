// L02_trace_threads_test.cpp — lesson 2: FIB_TRACE with a manager on each of several threads.
// The process exits while they still spawn and yield, so the writer at exit reads each trace
// while its thread records: the file must still be whole JSON with every manager's events.
#include <gtest/gtest.h>
#include <malloc.h>
#include <unistd.h>

#include <cstdlib>
#include <functional>
#include <latch>
#include <set>
#include <sstream>
#include <string>
#include <thread>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/lsan_interface.h>
#endif

#include "L02_trace_file.hpp"
#include "fib/fiber.hpp"

namespace {

using namespace l02_trace;

constexpr int kThreads = 3;
// A round spawns two fibers that yield kYields times each: about 200 events. After
// kRoundsBeforeExit rounds a buffer holds about 15,700 events in room for
// 16,384, a little short of two more growths (to room for 32,768, then 65,536)
// that the cap still lets it make while the file is written. The file is about
// 10 MB.
constexpr int kYields = 50;
constexpr int kRoundsBeforeExit = 75;
constexpr long kMostRounds = 10'000'000;  // the process exits long before
constexpr long kMostPolls = 100'000'000;
constexpr const char* kCap = "40000";

void spawn_two_and_join(fib::FiberManager& manager) {
    auto spin = [&manager] {
        for (int i = 0; i < kYields; ++i) manager.yield();
    };
    fib::Fiber first({.name = "spinner"}, spin);
    fib::Fiber second({.name = "spinner"}, spin);
    first.join();
    second.join();
}

// A thread's life. All the threads and main leave `started` together, with
// buffers about as full, and main exits. Each thread then waits for the file
// to appear (the writer has begun) and records as fast as it can, so that its
// buffer grows, moving to new memory, while the writer reads it. It never ends
// its manager: at exit every manager is still running.
void spawn_and_yield(const std::string& path, std::latch& started, std::latch& never) {
#if defined(__SANITIZE_ADDRESS__)
    // LeakSanitizer looks for leaks at exit, while this thread still runs a
    // fiber; it does not find what the thread's manager holds (its stacks and
    // their list) from there. Nothing this thread allocates is a leak.
    __lsan_disable();
#endif
    fib::FiberManager manager;
    for (int round = 0; round < kRoundsBeforeExit; ++round) spawn_two_and_join(manager);
    started.arrive_and_wait();
    for (long poll = 0; poll < kMostPolls && ::access(path.c_str(), F_OK) != 0; ++poll) {
    }
    for (long round = 0; round < kMostRounds; ++round) spawn_two_and_join(manager);
    never.wait();
}

// glibc's threshold for giving a block a mapping of its own otherwise rises as
// big blocks are freed; pinned, every buffer past 64 KiB is one, unmapped when
// it is freed, so reading a buffer its thread has just outgrown faults at once
// instead of reading stale bytes. The latches stay valid: exit() does not
// return, so this frame is never left.
void exit_while_threads_record(const std::string& path) {
    mallopt(M_MMAP_THRESHOLD, 64 * 1024);
    std::latch started(kThreads + 1), never(1);
    for (int i = 0; i < kThreads; ++i)
        std::thread(spawn_and_yield, path, std::ref(started), std::ref(never)).detach();
    started.arrive_and_wait();
    std::exit(0);
}

// How many fibers have events on their track ("X" slices, "i" instants) but
// no metadata line naming them in their manager: a torn or stale read makes
// such tracks (an id that is a heap pointer), and a whole file has none.
int unnamed_tracks(const std::string& text) {
    std::set<std::string> named, unnamed;
    std::istringstream lines(text);
    for (std::string line; std::getline(lines, line);) {
        const std::string track = field(line, "pid") + "/" + field(line, "tid");
        if (line.find("\"name\":\"thread_name\"") != std::string::npos)
            named.insert(track);
        else if (line.find("\"ph\":\"X\"") != std::string::npos ||
                 line.find("\"ph\":\"i\"") != std::string::npos)
            unnamed.insert(track);
    }
    int count = 0;
    for (const std::string& track : unnamed) count += named.count(track) == 0;
    return count;
}

TEST(L02_TraceThreads, ExitWhileOtherThreadsRecordWritesWholeJsonWithEveryManager) {
    const std::string path = trace_path("threads");
    std::remove(path.c_str());
    EXPECT_EXIT(
        {
            setenv("FIB_TRACE", path.c_str(), 1);
            setenv("FIB_TRACE_EVENTS", kCap, 1);
            exit_while_threads_record(path);
        },
        testing::ExitedWithCode(0), "fib: FIB_TRACE: 3 fiber manager\\(s\\) written to");
    const std::string text = read_file(path);
    std::remove(path.c_str());
    EXPECT_TRUE(JsonCheck::valid(text)) << text.size() << " bytes";
    EXPECT_EQ(unnamed_tracks(text), 0);
    for (int manager = 1; manager <= kThreads; ++manager) {
        const std::string pid = "\"pid\":" + std::to_string(manager) + ",";
        EXPECT_EQ(count(text, pid + "\"tid\":0,\"name\":\"process_name\""), 1) << manager;
        EXPECT_GE(count(text, "\"ph\":\"X\"," + pid), 2 * kYields * kRoundsBeforeExit) << manager;
    }
    EXPECT_EQ(count(text, "still running at exit"), kThreads);
}

}  // namespace
