// exception_state.hpp — lesson 2: the C++ runtime's "exceptions in flight" state, kept per fiber.
//
// libstdc++ keeps, per thread, the stack of exceptions currently caught (what a
// bare `throw;` rethrows) and the count of exceptions being thrown (what
// std::uncaught_exceptions() returns), in a struct that __cxa_get_globals()
// returns. All fibers of a thread share that one struct. A fiber that yields
// inside a catch block would otherwise come back to find another fiber's
// exception on top, and `throw;` would rethrow the wrong one. So each switch
// saves the leaving fiber's copy and installs the arriving fiber's.
#pragma once

#include <cxxabi.h>

namespace fib {

// Mirrors libstdc++'s __cxa_eh_globals (unwind-cxx.h), stable since GCC 3.
// tests/L02_exceptions_test.cpp checks the mirror against the runtime.
struct ExceptionState {
    void* caught_exceptions = nullptr;  // top of the caught-exception stack
    unsigned int uncaught_exceptions = 0;

    // No exception caught or in flight: true at almost every switch.
    bool empty() const { return caught_exceptions == nullptr && uncaught_exceptions == 0; }
};

inline ExceptionState* thread_exception_state() {
    return reinterpret_cast<ExceptionState*>(abi::__cxa_get_globals());
}

}  // namespace fib
