// glibc_tls.hpp — lesson 7: what a TLS block needs from glibc: the TCB's and the DTV's layouts and a few private names.
//
// On x86-64 the %fs base (the "thread pointer", tp) points at the thread's
// control block, glibc's struct pthread (~2.3 KiB); every module's TLS lies
// below it ("variant II"). Compiled code reaches it in three ways:
//
//   mov %fs:-16, %eax          a thread_local of the executable: a fixed offset from tp
//   mov %fs:0x28, %rax         the stack-protector canary, a field of the TCB
//   call __tls_get_addr        a shared library's TLS: tp -> DTV -> module's block
//
// This header mirrors the start of that control block (tcbhead_t in glibc's
// sysdeps/x86_64/nptl/tls.h) and a DTV entry, and declares the GLIBC_PRIVATE
// functions and variables that pthread_create itself uses to set a thread up.
// Private means glibc may change them: tests/L07_tcb_test.cpp and
// L07_dlopen_test.cpp check each layout against the running thread, so a glibc
// that moved one fails a test rather than a fiber.
#pragma once

#include <cstddef>
#include <cstdint>

namespace fib {

// The first 0x4c bytes of glibc's struct pthread on x86-64.
struct TcbHead {
    void* tcb;                        // 0x00: tp itself; `mov %fs:0` reads the thread pointer
    void* dtv;                        // 0x08: the dynamic thread vector: module id -> its block
    void* self;                       // 0x10: struct pthread*; pthread_self() returns it
    int multiple_threads;             // 0x18: 0 lets libc skip atomic instructions
    int gscope_flag;                  // 0x1c: the dynamic linker's lookup lock
    std::uintptr_t sysinfo;           // 0x20
    std::uintptr_t stack_guard;       // 0x28: the canary -fstack-protector checks
    std::uintptr_t pointer_guard;     // 0x30: the key of PTR_MANGLE (setjmp, atexit)
    unsigned long vgetcpu_cache[2];   // 0x38
    unsigned int feature_1;           // 0x48: CET (shadow stack, IBT) state
};
static_assert(offsetof(TcbHead, dtv) == 0x08);
static_assert(offsetof(TcbHead, self) == 0x10);
static_assert(offsetof(TcbHead, multiple_threads) == 0x18);
static_assert(offsetof(TcbHead, sysinfo) == 0x20);
static_assert(offsetof(TcbHead, stack_guard) == 0x28);  // fixed by the ABI: g++ emits %fs:0x28
static_assert(offsetof(TcbHead, pointer_guard) == 0x30);
static_assert(offsetof(TcbHead, feature_1) == 0x48);

// One entry of the DTV (glibc's dtv_t, sysdeps/generic/dl-dtv.h). A TCB's dtv
// points at entry 1 of its array: dtv[-1] counts the module slots, dtv[0] is
// the generation, dtv[id] the block of the module with that TLS id (the
// dlpi_tls_modid dl_iterate_phdr reports). A module loaded with the program
// lives in the static area (to_free null); one dlopen'ed later gets a block
// malloc'd by __tls_get_addr at its first access (to_free is that pointer),
// and until then val is kDtvUnallocated.
union DtvEntry {
    std::size_t counter;
    struct {
        void* val;
        void* to_free;
    } pointer;
};
static_assert(sizeof(DtvEntry) == 16);
inline void* const kDtvUnallocated = reinterpret_cast<void*>(-1);

// The thread pointer of the code running now: the TCB's first word points to
// itself, so this works with or without FSGSBASE.
inline TcbHead* thread_pointer() {
    TcbHead* tp;
    asm volatile("movq %%fs:0, %0" : "=r"(tp));
    return tp;
}

}  // namespace fib

struct __res_state;

extern "C" {
// libc (GLIBC_PRIVATE): this thread's resolver state, TLS. Main's is the
// global _res; pthread_create points a new thread's at its struct pthread.
extern __thread struct __res_state* __resp;
// ld.so: a new TCB with a zeroed struct pthread, a DTV of its own and every
// module's TLS block initialised from its image (mem == nullptr: malloc it).
void* _dl_allocate_tls(void* mem);
// ld.so: free what _dl_allocate_tls made (the TCB too when dealloc_tcb).
void _dl_deallocate_tls(void* tcb, bool dealloc_tcb);
// ld.so: how large the static TLS area is (all modules, the TCB, spare room).
void _dl_get_tls_static_info(std::size_t* size, std::size_t* align);
// libc: run and forget the destructors of this block's thread_local objects.
void __call_tls_dtors();
// libc: glibc's debugger tables; [2] is the offset of struct pthread's field:
// tid, and `specific` (the pthread keys' values; the first block of 32 keys
// lies inside struct pthread, and a thread's specific[0] points at it).
extern const std::uint32_t _thread_db_pthread_tid[3];
extern const std::uint32_t _thread_db_pthread_specific[3];
// ... and of cancelhandling, which nptl/descr.h declares right after
//   struct pthread_unwind_buf* cleanup_jmp_buf;   where pthread_exit's unwinding ends
// (cleanup_jmp_buf_at() below; L07_Tcb checks it on two threads).
extern const std::uint32_t _thread_db_pthread_cancelhandling[3];
// libc (public since 2.35): where the thread's rseq area sits, from tp.
extern const std::ptrdiff_t __rseq_offset;
extern const unsigned int __rseq_size;
// libc.a only: free this thread's malloc cache and arena, as a thread's exit
// does. Weak: a dynamically linked libc does not export it.
void __libc_thread_freeres() __attribute__((weak));
}

namespace fib {

// The offset of struct pthread's cleanup_jmp_buf: the word before cancelhandling.
inline std::size_t cleanup_jmp_buf_at() {
    return _thread_db_pthread_cancelhandling[2] - sizeof(void*);
}

}  // namespace fib
