// sanitizer.hpp — lesson 1: telling AddressSanitizer and ThreadSanitizer that we switch stacks.
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
//
// ThreadSanitizer (make TSAN=1) follows each thread's call stack and clock; to
// it, each context is a "fiber" of its own (its word), made with
// tsan_create_fiber(), and a switch is announced with tsan_switch_to() right
// before switch_context, with no instrumented code in between (what runs
// after the call counts as the new fiber's). A fiber's clock joins the
// thread's at each switch, so contexts of one thread that share data are in
// order, as they are: TSan reports races between threads, not between them.
//
// switch_announced() does the bracketing for code that switches by hand, as
// lesson 1's demo does: each context keeps a StackRecord, the bounds of its
// stack and ASan's fake frames while it is switched out, and its TSan fiber.
#pragma once

#include <pthread.h>

#include <cstddef>
#include <cstdint>

#include "fib/context.hpp"
#include "fib/stack.hpp"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/common_interface_defs.h>
#endif
#if defined(__SANITIZE_THREAD__)
#include <sanitizer/tsan_interface.h>
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

// ThreadSanitizer: the fiber running now (the thread's own, at first); a new
// one, named for reports; one that will never run again; and the switch to
// one. Without -fsanitize=thread these do nothing (and return nullptr).
inline void* tsan_current_fiber() {
#if defined(__SANITIZE_THREAD__)
    return __tsan_get_current_fiber();
#else
    return nullptr;
#endif
}
inline void* tsan_create_fiber([[maybe_unused]] const char* name) {
#if defined(__SANITIZE_THREAD__)
    void* fiber = __tsan_create_fiber(0);
    if (name && *name) __tsan_set_fiber_name(fiber, name);
    return fiber;
#else
    return nullptr;
#endif
}
inline void tsan_destroy_fiber([[maybe_unused]] void* fiber) {
#if defined(__SANITIZE_THREAD__)
    if (fiber) __tsan_destroy_fiber(fiber);
#endif
}
inline void tsan_switch_to([[maybe_unused]] void* fiber) {
#if defined(__SANITIZE_THREAD__)
    __tsan_switch_to_fiber(fiber, 0);
#endif
}

// What the sanitizers must know of one context: where its stack lies, where
// ASan's fake frames are kept while it is switched out, and its TSan fiber.
struct StackRecord {
    const void* bottom = nullptr;
    std::size_t size = 0;
    void* fake_stack = nullptr;
    void* tsan_fiber = nullptr;
};

inline StackRecord record_of(const Stack& stack) {
    return {stack.bottom(), stack.size(), nullptr, tsan_create_fiber(nullptr)};
}

// The calling thread's own stack, for the context that runs on it (main).
inline StackRecord record_of_this_thread() {
    StackRecord record;
    record.tsan_fiber = tsan_current_fiber();
    pthread_attr_t attributes;
    if (pthread_getattr_np(pthread_self(), &attributes) == 0) {
        void* bottom = nullptr;
        pthread_attr_getstack(&attributes, &bottom, &record.size);
        record.bottom = bottom;
        pthread_attr_destroy(&attributes);
    }
    return record;
}

// switch_context(from, to, arg), bracketed for ASan. It returns when some
// context switches back to `from`. A context that starts fresh has no
// switch_announced() of its own to return into: its entry function calls
// finish_switch(nullptr, nullptr, nullptr) first.
inline void switch_announced(Context* from, StackRecord& from_record, Context* to,
                             const StackRecord& to_record, std::uintptr_t arg) {
    start_switch(&from_record.fake_stack, to_record.bottom, to_record.size);
    tsan_switch_to(to_record.tsan_fiber);
    switch_context(from, to, arg);
    finish_switch(from_record.fake_stack, nullptr, nullptr);
}

}  // namespace fib::sanitizer
