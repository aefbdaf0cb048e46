// robust_list.hpp — lesson 7: why a fiber with a TLS block of its own may not lock a robust mutex, and the clear stop.
//
// A robust mutex (PTHREAD_MUTEX_ROBUST) survives its owner's death: glibc
// links every robust mutex a thread holds into a list whose head lies in the
// thread's struct pthread, and registers that head with the kernel
// (set_robust_list); when the thread dies, the kernel walks the list and marks
// each mutex "owner died". glibc reaches that head two ways at once:
//
//   %fs:robust_head.list          read and written %fs-relative: the fiber's block
//   &THREAD_SELF->robust_head     the list's end, through self: the thread's own
//
// A fiber block's self points at the thread (tls_block.cpp says why), so on a
// fiber the two are different memory, and the kernel knows neither the
// fiber's half nor its entries: a lock followed by an unlock and another lock
// would corrupt the list in silence. So each fiber block's list word points
// just past an inaccessible page: the first robust lock on the fiber faults
// there, and the handler below stops with a message naming the fiber.
#pragma once

#include "fib/glibc_tls.hpp"

namespace fib {

// Make the first robust-mutex lock on this block stop the program clearly.
// The first call finds where the head lies (the kernel tells: get_robust_list)
// and installs the SIGSEGV handler that recognises the fault.
void refuse_robust_mutexes(TcbHead* block);

}  // namespace fib
