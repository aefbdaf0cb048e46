// fatal.hpp — lesson 1: the one way this library reports misuse it cannot recover from.
//
// Prints "fib: fatal: <message>" on one line to stderr and aborts. Used where
// going on would mean silent corruption (a context returning into nothing, a
// fiber joining itself, ...). Messages name the fiber involved.
#pragma once

namespace fib {

[[noreturn]] void fatal(const char* format, ...) __attribute__((format(printf, 1, 2)));

}  // namespace fib
