// L02_trace_test.cpp — lesson 2: FIB_TRACE. A traced run writes one track per fiber, each
// spawn, wake and end in order, a parked slice named after its wait site with its waker, and
// counts what a full buffer drops, fiber names included; without the variable nothing is
// written or printed.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "L01_sanitizers.hpp"
#include "L02_schedule.hpp"
#include "L02_trace_file.hpp"
#include "fib/fiber.hpp"

namespace {

using namespace l02_trace;

// main spawns "worker" (fiber 1), which yields once, and "joiner" (fiber 2),
// which joins it; main joins the joiner. So each join parks, and is woken by
// the end of the fiber it waits for.
void worker_joiner_and_main() {
    fib::FiberManager manager;
    fib::Fiber worker({.name = "worker"}, [&manager] { manager.yield(); });
    fib::Fiber joiner({.name = "joiner"}, [&worker] { worker.join(); });
    joiner.join();
}

TEST(L02_Trace, OneNamedTrackPerFiberAndTheManagerAsAProcess) {
    const std::string text = run_traced(trace_path("tracks"), nullptr, worker_joiner_and_main);
    EXPECT_EQ(count(text, "\"name\":\"thread_name\""), 3);
    EXPECT_EQ(count(text, "\"tid\":0,\"name\":\"thread_name\",\"args\":{\"name\":\"fiber 0 (main)\"}"), 1);
    EXPECT_EQ(count(text, "\"tid\":1,\"name\":\"thread_name\",\"args\":{\"name\":\"fiber 1 (worker)\"}"), 1);
    EXPECT_EQ(count(text, "\"tid\":2,\"name\":\"thread_name\",\"args\":{\"name\":\"fiber 2 (joiner)\"}"), 1);
    EXPECT_EQ(count(text, "\"name\":\"process_name\",\"args\":{\"name\":\"fib manager 1 (thread "), 1);
    EXPECT_EQ(count(text, "\"dropped_events\":0"), 1);
}

TEST(L02_Trace, SpawnsWakesAndEndsComeInTheOrderTheyHappened) {
    const std::string text = run_traced(trace_path("order"), nullptr, worker_joiner_and_main);
    EXPECT_EQ(instants(text), "spawn/1 spawn/2 end/1 wake/2 end/2 wake/0");
    EXPECT_EQ(count(text, "\"name\":\"spawn\",\"cat\":\"spawn\",\"args\":{\"by\":\"fiber 0 (main)\"}"), 2);
}

TEST(L02_Trace, AParkedSliceNamesItsWaitSiteAndItsWaker) {
    const std::string text = run_traced(trace_path("park"), nullptr, worker_joiner_and_main);
    EXPECT_EQ(count(text, "\"cat\":\"parked\""), 2);
    EXPECT_EQ(count(text, "\"name\":\"parked: join\",\"cat\":\"parked\",\"args\":{\"site\":\"join, "
                          "waiting for fiber 1 (worker)\",\"by\":\"fiber 1 (worker)\"}"),
              1);
    EXPECT_EQ(count(text, "\"name\":\"parked: join\",\"cat\":\"parked\",\"args\":{\"site\":\"join, "
                          "waiting for fiber 2 (joiner)\",\"by\":\"fiber 2 (joiner)\"}"),
              1);
    EXPECT_EQ(count(text, "\"name\":\"wake\",\"cat\":\"wake\",\"args\":{\"by\":\"fiber 1 (worker)\"}"), 1);
}

// main runs until it parks and again once woken; the worker runs until its
// yield and again to its end; the joiner until its join and again to its end.
// Each spawned fiber waits in the ready queue after its spawn and after its
// yield or wake.
TEST(L02_Trace, EveryRunningSpanEndsAtAYieldAParkOrAnEnd) {
    EXPECTS_FIFO_ORDER();  // counts the steps of one interleaving
    const std::string text = run_traced(trace_path("spans"), nullptr, worker_joiner_and_main);
    EXPECT_EQ(count(text, "\"cat\":\"running\""), 6);
    EXPECT_EQ(count(text, "\"tid\":1,\"ts\""), 2 + 2 + 2);  // running, ready; spawn, end
    EXPECT_EQ(count(text, "\"cat\":\"ready\""), 5);
}

// The scenario makes 15 events: the main fiber's first run, 2 spawns, 6 runs,
// 1 yield, 2 parks, 2 wakes, 2 ends. A buffer of 5 keeps the first 5.
TEST(L02_Trace, AFullBufferCountsWhatItDrops) {
    EXPECTS_FIFO_ORDER();  // counts the steps of one interleaving
    const std::string text = run_traced(trace_path("dropped"), "5", worker_joiner_and_main);
    EXPECT_EQ(count(text, "\"dropped_events\":10,\"dropped_names\":0}"), 1);  // both spawns kept
    EXPECT_EQ(instants(text), "spawn/1 spawn/2");
}

// The check the tests make of a whole file: one JSON value, nothing cut.
TEST(L02_Trace, TheJsonCheckTakesWholeJsonAndNothingElse) {
    EXPECT_TRUE(JsonCheck::valid("{\"traceEvents\":[\n{\"ts\":-1.5e3,\"s\":\"a\\\"b\\u00e9\"},[],{}\n]}\n"));
    EXPECT_TRUE(JsonCheck::valid("[true,false,null,0,12.25]"));
    EXPECT_FALSE(JsonCheck::valid("{\"traceEvents\":[\n{\"ts\":1}"));  // cut short
    EXPECT_FALSE(JsonCheck::valid("{\"traceEvents\":[{\"ts\":1},]}"));  // a stray comma
    EXPECT_FALSE(JsonCheck::valid("{\"name\":\"a\tb\"}"));             // a raw control character
    EXPECT_FALSE(JsonCheck::valid("{\"ts\":1.}"));
    EXPECT_FALSE(JsonCheck::valid("{} {}"));
    EXPECT_FALSE(JsonCheck::valid(""));
}

// Far more fibers than the buffer holds events: main spawns and joins them one
// at a time, each ending at once (2,000 under TSan, still 20 times the cap).
constexpr int kManyFibers = fewer_under_thread_sanitizer(20'000);
constexpr int kSmallCap = 100;

void many_short_fibers() {
    fib::FiberManager manager;
    for (int i = 0; i < kManyFibers; ++i) fib::Fiber({.name = "short-lived"}, [] {}).join();
}

// The cap bounds the names too: a fiber's name is kept only with its spawn event,
// so at most kSmallCap of them, and each name not kept is counted. The file then
// holds at most three lines per event kept (a slice, an instant, a last slice)
// and one per name, none longer than a few hundred bytes.
TEST(L02_Trace, AFullBufferKeepsNoMoreNamesThanEventsAndCountsTheNamesItDrops) {
    const std::string text =
        run_traced(trace_path("names"), std::to_string(kSmallCap).c_str(), many_short_fibers);
    EXPECT_TRUE(JsonCheck::valid(text));
    const int names = count(text, "\"name\":\"thread_name\"");
    EXPECT_GE(names, 2);  // main and the first fiber
    EXPECT_LE(names, kSmallCap);
    EXPECT_EQ(count(text, "\"dropped_names\":" + std::to_string(kManyFibers + 1 - names) + "}"), 1);
    EXPECT_LE(count(text, "\n"), 4 * kSmallCap + 3);
    EXPECT_LE(text.size(), 300u * (4 * kSmallCap + 3));
}

TEST(L02_Trace, WithoutTheVariableNothingIsWrittenOrPrinted) {
    const std::string path = trace_path("off");
    EXPECT_EXIT(
        {
            unsetenv("FIB_TRACE");
            unsetenv("FIB_SCHEDULE_SEED");  // its line is the one thing printed under a seed
            worker_joiner_and_main();
            std::exit(0);
        },
        testing::ExitedWithCode(0), "^$");
    EXPECT_EQ(read_file(path), "");
}

}  // namespace
