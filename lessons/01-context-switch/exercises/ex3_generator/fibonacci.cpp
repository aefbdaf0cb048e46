// fibonacci.cpp — lesson 1, exercise 3: the generator's loop and next().
//
// To do: prepare generator_ to run produce() on stack_ (fib::prepare_context), make
// next() switch into the loop and return the number it left in value_, and write
// the loop: compute the next number, store it in value_, count it in made_, note
// the address of one of its locals in loop_frame_, and switch back to caller_.
// Switch with fib::sanitizer::switch_announced so that ASan builds work too.
#include "fibonacci.hpp"

Fibonacci::Fibonacci() {}

std::uint64_t Fibonacci::next() { return 0; }

void Fibonacci::produce(std::uintptr_t) {}
