// fatal.cpp — lesson 1: print one clear line and abort.
#include "fib/fatal.hpp"

#include <cstdarg>
#include <cstdio>
#include <cstdlib>

namespace fib {

void fatal(const char* format, ...) {
    char message[512];
    va_list args;
    va_start(args, format);
    std::vsnprintf(message, sizeof message, format, args);
    va_end(args);
    std::fprintf(stderr, "fib: fatal: %s\n", message);
    std::fflush(stderr);
    std::abort();
}

}  // namespace fib
