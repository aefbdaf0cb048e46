// shuffle.hpp — lesson 2: FIB_SCHEDULE_SEED, a seeded shuffle of the ready queue that finds order bugs.
//
// A program whose result depends on the order fibers happen to run in has a bug
// that FIFO order hides: it passes today and fails after an unrelated change
// moves one spawn. With FIB_SCHEDULE_SEED=N in the environment, every manager
// created afterwards takes the next fiber from a pseudo-random place near the
// front of its ready queue (among the first 32) instead of the front itself;
// the same N gives the same schedule, so a
// failure found under a seed can be replayed and debugged.
#pragma once

#include <cstdint>

namespace fib {

// The seed FIB_SCHEDULE_SEED gives, read each time a manager is created; false
// when the variable is absent. A value that is not a number stops the program.
// The first manager created under a seed prints it on stderr.
bool schedule_seed(std::uint64_t* seed);

// splitmix64: the next pseudo-random number of the sequence `state` stands
// for; advances `state`. Small, fast and good enough to pick a queue position.
std::uint64_t next_random(std::uint64_t& state);

}  // namespace fib
