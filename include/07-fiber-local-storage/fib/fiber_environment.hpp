// fiber_environment.hpp — lesson 7: what a fiber gets beyond registers and a stack, and when.
//
// An environment gives fibers state of their own that lives outside the
// Context: FiberTls (fiber_tls.hpp) gives each one a TLS block and a
// fiber_local block. It chooses the routine that switches (one that also
// loads the %fs and %gs bases), fills in each new fiber's context, and runs
// code on the fiber as its function starts and ends. A manager without one
// switches with lesson 1's switch_context, as in lessons 2-6.
#pragma once

#include <cstdint>

#include "fib/context.hpp"
#include "fib/fiber_record.hpp"

namespace fib {

class FiberEnvironment {
public:
    virtual void fiber_created(FiberRecord& fiber) = 0;   // before its first switch
    virtual void fiber_starting(FiberRecord& fiber) = 0;  // on the fiber, before its function
    virtual void fiber_ending(FiberRecord& fiber) = 0;    // on the fiber, after its function
    virtual void fiber_released(FiberRecord& fiber) = 0;  // its record is about to go

protected:
    ~FiberEnvironment() = default;
};

// switch_context's signature: lesson 7's routines load segment bases first.
using SwitchRoutine = void (*)(Context* from, Context* to, std::uintptr_t arg);

}  // namespace fib
