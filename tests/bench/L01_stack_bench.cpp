// L01_stack_bench.cpp — make bench, lesson 1: what it costs the kernel to keep many stacks.
//
//   stack_mappings  kernel mappings (lines of /proc/self/maps) this process gains
//                   with 100,000 64 KiB stacks alive, each with its guard page: about
//                   100,000 per 2 stacks where the guard is an mprotect'ed page (it
//                   splits the stack's mapping), a handful where the kernel has guard
//                   regions (Linux 6.13+) and neighbouring stacks merge into one mapping
#include <fstream>
#include <string>
#include <vector>

#include "bench.hpp"
#include "fib/stack.hpp"

namespace bench {
namespace {

constexpr long kStacks = 100'000;

long mappings() {
    std::ifstream maps("/proc/self/maps");
    long lines = 0;
    for (std::string line; std::getline(maps, line);) ++lines;
    return lines;
}

// Beyond vm.max_map_count, mmap fails and Stack throws: the row then says how
// many stacks were made before that.
void stack_costs(std::vector<Figure>& figures) {
    const long before = mappings();
    std::vector<fib::Stack> stacks;
    stacks.reserve(kStacks);
    std::string note;
    try {
        for (long i = 0; i < kStacks; ++i) stacks.emplace_back(fib::Stack::kDefaultSize);
    } catch (const std::exception& error) {
        note = "; stopped after " + std::to_string(stacks.size()) + " stacks: " + error.what();
    }
    const double grown = static_cast<double>(mappings() - before);
    Figure figure{"stack_mappings", Summary{grown, grown, grown}, "maps"};
    figure.repetitions = 1;
    figure.compared = std::to_string(stacks.size()) + " stacks alive" + note;
    figure.result_extra = " stacks=" + std::to_string(stacks.size());
    figures.push_back(figure);
}

[[maybe_unused]] const bool registered = add(Section{"stacks", 1, false, stack_costs});

}  // namespace
}  // namespace bench
