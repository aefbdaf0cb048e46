// L10_coroutine_bench.cpp — make bench, lesson 10: stackless tasks next to the fibers, same run.
//
//   coroutine_resume      one resume of a suspended coroutine and its suspension
//                         again (co_await std::suspend_always), driven by hand:
//                         the coroutine's whole round trip, against
//                         switch_context's one-way switch (a fiber's round
//                         trip is two of those) and a fiber's yield
//   executor_yield        co_await co::yield() with two tasks on the Executor:
//                         the suspension, the ready queue and the resume, per
//                         yield, against a fiber's yield (lesson 2)
//   coroutine_conn_bytes  lesson 4's conn_rss measured on CoEchoServer: RSS
//                         per idle connection, a task (two frames) each,
//                         against conn_rss, a fiber (a stack) each
#include <coroutine>
#include <cstdio>
#include <string>
#include <vector>

#include "../../lessons/10-coroutines/co_echo_server.hpp"
#include "L04_idle_connections.hpp"
#include "bench.hpp"
#include "fib/awaitables.hpp"
#include "fib/executor.hpp"
#include "fib/task.hpp"

namespace bench {
namespace {

fib::Task<void> suspend_forever(long& resumes) {
    for (;;) {
        co_await std::suspend_always{};
        ++resumes;
    }
}

Summary resume_each(long operations) {
    long resumes = 0;
    fib::Task<void> task = suspend_forever(resumes);
    const auto handle = task.handle();
    handle.resume();  // to its first suspension
    return ns_per_op(operations, [handle](long count) {
        for (long i = 0; i < count; ++i) handle.resume();
    });
}

fib::Task<void> yield_times(long count) {
    for (long i = 0; i < count; ++i) co_await fib::co::yield();
}

// Two tasks take turns: each yield of one resumes the other.
Summary executor_yield_each(long operations) {
    fib::FiberManager manager;
    fib::Executor executor;
    return ns_per_op(operations, [&executor](long count) {
        executor.spawn(yield_times(count / 2));
        executor.spawn(yield_times(count / 2));
        executor.wait();
    });
}

constexpr int kMemoryRepetitions = 5;
constexpr long kConnections = 10'000;

void coroutine_costs(std::vector<Figure>& figures) {
    Figure resume{"coroutine_resume", resume_each(50'000'000)};
    Figure yield{"executor_yield", executor_yield_each(10'000'000)};
    if (const Figure* raw = find(figures, "switch_context"))
        compare(resume, "switch_context", "switch_context_ratio", resume.value.median / raw->value.median);
    if (const Figure* fiber_yield = find(figures, "yield")) {
        compare(resume, "fiber yield", "yield_ratio", resume.value.median / fiber_yield->value.median);
        compare(yield, "fiber yield", "yield_ratio", yield.value.median / fiber_yield->value.median);
    }
    figures.push_back(resume);
    figures.push_back(yield);
}

void coroutine_memory(std::vector<Figure>& figures) {
    if (!idle::raise_fd_limit(kConnections + 100)) {
        std::printf("coroutine_conn_bytes skipped: %ld connections need a hard RLIMIT_NOFILE above %ld\n",
                    kConnections, kConnections + 100);
        return;
    }
    std::vector<double> per_connection;
    for (int i = 0; i < kMemoryRepetitions; ++i)
        per_connection.push_back(idle::rss_per_idle_connection<CoEchoServer>(kConnections));
    Figure memory{"coroutine_conn_bytes", summarize(per_connection), "bytes"};
    memory.repetitions = kMemoryRepetitions;
    memory.result_extra = " conns=" + std::to_string(kConnections);
    if (const Figure* fibers = find(figures, "conn_rss"))
        compare(memory, "conn_rss (a fiber each)", "conn_rss_ratio", memory.value.median / fibers->value.median);
    figures.push_back(memory);
}

[[maybe_unused]] const bool registered[] = {
    add(Section{"coroutine_memory", 10, true, coroutine_memory}),
    add(Section{"coroutines", 10, false, coroutine_costs}),
};

}  // namespace
}  // namespace bench
