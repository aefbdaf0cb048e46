// sanitizer.hpp — lesson 1: telling AddressSanitizer that we switch stacks.
//
// ASan keeps track of which stack is running. Switch behind its back and it may
// report false errors, or miss real ones, so every switch is bracketed:
//
//   start_switch(&my_fake_stack, to_bottom, to_size);   // on the old stack, last
//   switch_context(...);
//   finish_switch(my_fake_stack, &from_bottom, &from_size); // on the new stack, first
//
// A context that will never run again passes nullptr to start_switch so ASan
// frees its fake frames. Without -fsanitize=address these compile to nothing.
#pragma once

#include <cstddef>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/common_interface_defs.h>
#endif

namespace fib::sanitizer {

inline void start_switch([[maybe_unused]] void** fake_stack_save,
                         [[maybe_unused]] const void* to_bottom,
                         [[maybe_unused]] std::size_t to_size) {
#if defined(__SANITIZE_ADDRESS__)
    __sanitizer_start_switch_fiber(fake_stack_save, to_bottom, to_size);
#endif
}

inline void finish_switch([[maybe_unused]] void* fake_stack_save,
                          [[maybe_unused]] const void** from_bottom,
                          [[maybe_unused]] std::size_t* from_size) {
#if defined(__SANITIZE_ADDRESS__)
    __sanitizer_finish_switch_fiber(fake_stack_save, from_bottom, from_size);
#endif
}

}  // namespace fib::sanitizer
