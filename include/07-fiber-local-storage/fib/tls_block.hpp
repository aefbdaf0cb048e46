// tls_block.hpp — lesson 7: TLS blocks for fibers: a thread's control block, its DTV and every module's TLS.
//
// One block per fiber that has TLS of its own, laid out exactly as a thread's
// (x86-64 is TLS "variant II": everything below the thread pointer):
//
//      lower addresses                                             higher
//      ... | libc's TLS | libstdc++'s | the executable's | struct pthread (TCB) ...
//          | errno, ... | eh globals  | your thread_local| tcb self dtv canary
//                                                        ^ tp: the fiber's %fs base
//      DTV (malloc'd): [gen][exe's block][libstdc++'s][libc's]...   <- tp->dtv
//
// A fiber's %fs base is the tp of its block; switch_context_fs loads it.
// Blocks are pooled per manager and handed out again: see take().
#pragma once

#include <cstddef>
#include <vector>

#include "fib/glibc_tls.hpp"

namespace fib {

class TlsBlockPool {
public:
    TlsBlockPool();  // on the thread whose control block the fibers' copy
    ~TlsBlockPool();
    TlsBlockPool(const TlsBlockPool&) = delete;
    TlsBlockPool& operator=(const TlsBlockPool&) = delete;

    // A block for a new fiber, every module's TLS at its initial values; its
    // thread pointer, to become the fiber's %fs base.
    TcbHead* take();
    void give_back(TcbHead* tp);

    // Run on the fiber, on its own block: as it starts, and as its function ends.
    void fiber_starting() const;
    static void fiber_ending();

    TcbHead* thread() const { return thread_; }
    std::size_t created() const { return created_; }
    std::size_t pooled() const { return free_.size(); }

private:
    TcbHead* make_block();

    TcbHead* thread_;              // the creating thread's control block
    struct __res_state* resolver_;      // the creating thread's resolver state
    std::vector<TcbHead*> free_;   // blocks whose fiber has been released
    std::size_t created_ = 0;
};

}  // namespace fib
