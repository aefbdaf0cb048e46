// offload_each.hpp — lesson 8, exercise 3: one offload per input, all under way at once.
//
//   std::vector<std::string> pages = offload_each(pool, urls, download);
//
// Calls `function(input)` on the pool for every input and returns the results
// in the inputs' order. The pieces of work run at the same time, as many as
// the pool has workers: the calling fiber waits for them all, not for each in
// turn before it starts the next. If one throws, its exception reaches the
// caller (after every piece has finished: none is left running behind it).
#pragma once

#include <vector>

#include "fib/offload.hpp"

template <typename Input, typename Function>
auto offload_each(fib::ThreadPool& pool, const std::vector<Input>& inputs, Function function)
    -> std::vector<std::invoke_result_t<Function&, const Input&>> {
    std::vector<std::invoke_result_t<Function&, const Input&>> results;
    for (const Input& input : inputs) results.push_back(fib::offload(pool, [&] { return function(input); }));
    return results;
}
