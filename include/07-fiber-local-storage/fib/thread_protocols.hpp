// thread_protocols.hpp — lesson 7: what glibc does through the thread pointer, made to hold on fiber blocks.
//
// glibc reaches a thread's struct pthread three ways (see the lesson's "What
// glibc does through the thread pointer"):
//
//   THREAD_GETMEM(self, field)    %fs:offset: the block the running fiber is on
//   THREAD_SELF->field            through %fs:0x10, `self`: the thread (tls_block.cpp)
//   t->field, from another thread through glibc's list of threads: the thread
//
// A protocol that writes a field one way and reads it another breaks on a
// fiber block. Two of them need help before the first block is used:
//
// - libc's "one thread only" shortcut. multiple_threads (%fs:0x18) lets libc
//   drop the lock prefix of its atomics (malloc's fastbins among them).
//   pthread_create sets it, %fs-relative, on the first thread's creation: from
//   a fiber, in the fiber's block, and the thread's own copy stays 0. So the
//   process leaves single-threaded mode for good first, from the thread itself.
// - setuid() and its kin. The calling thread marks every other thread and
//   signals it (SIGSETXID) until its handler clears the mark; the handler
//   clears it %fs-relative, in the fiber's block, and the caller signals for
//   ever. So glibc's handler is wrapped to run on the thread's own block.
#pragma once

namespace fib {

// Once per process, on a thread's own block (FiberTls is never made on a
// fiber): leave single-threaded mode and wrap glibc's SIGSETXID handler.
void prepare_thread_protocols();

#if defined(__aarch64__)
// AArch64: pthread_cancel() marks the thread's own struct pthread, and a
// fiber on its own block reads only the block's (THREAD_SELF is tp minus
// sizeof(struct pthread)): glibc would never cancel it, and would cancel the
// thread's main at its next cancellation point, under every fiber. Run on a
// fiber as it starts, resumes and ends: stops the program naming the fiber
// once the thread has been cancelled.
void refuse_cancellation_on_fiber();
#endif

}  // namespace fib
