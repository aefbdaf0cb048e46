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
// On AArch64 tp is tpidr_el0 and the layout is "variant I": tp points at a
// 16-byte TCB (the DTV pointer and a word glibc leaves unused), every
// module's TLS lies above it, and struct pthread (1856 bytes in glibc 2.36)
// directly below it: pthread_self() is tp - sizeof(struct pthread). The
// canary and the pointer guard are globals there, not TCB fields.
//
// This header mirrors the start of that control block (tcbhead_t in glibc's
// sysdeps/x86_64/nptl/tls.h and sysdeps/aarch64/nptl/tls.h) and a DTV entry,
// and declares the GLIBC_PRIVATE functions and variables that pthread_create
// itself uses to set a thread up. Private means glibc may change them:
// tests/L07_tcb_test.cpp and L07_dlopen_test.cpp check each layout against the
// running thread, so a glibc that moved one fails a test rather than a fiber.
#pragma once

#include <unwind.h>

#include <cstddef>
#include <cstdint>

extern "C" {
// libc: glibc's debugger tables. sizeof(struct pthread), and in each [2] the
// offset of a field of it.
extern const std::uint32_t _thread_db_sizeof_pthread;
}

namespace fib {

#if defined(__aarch64__)

// glibc's tcbhead_t on AArch64: the 16 bytes tp points at.
struct TcbHead {
    void* dtv;     // 0x00: the dynamic thread vector: module id -> its block
    void* thread;  // 0x08: glibc's `private`, which glibc never uses; on a fiber
                   //       block, the tp of the thread it runs on (tls_block.cpp)
};
static_assert(sizeof(TcbHead) == 16);

// The thread pointer of the code running now.
inline TcbHead* thread_pointer() { return static_cast<TcbHead*>(__builtin_thread_pointer()); }

// Where a block's struct pthread starts: right below tp. pthread_self() on a
// fiber's block is this, the block's own, not the thread's.
inline char* descriptor_of(const TcbHead* tp) {
    return const_cast<char*>(reinterpret_cast<const char*>(tp)) - _thread_db_sizeof_pthread;
}

// struct pthread's first word: 0 lets libc skip atomic instructions.
inline int* multiple_threads_of(const TcbHead* tp) {
    return reinterpret_cast<int*>(descriptor_of(tp));
}

#else

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

// The thread pointer of the code running now: the TCB's first word points to
// itself, so this works with or without FSGSBASE.
inline TcbHead* thread_pointer() {
    TcbHead* tp;
    asm volatile("movq %%fs:0, %0" : "=r"(tp));
    return tp;
}

// Where a block's struct pthread starts: the TCB is its first member.
inline char* descriptor_of(const TcbHead* tp) {
    return const_cast<char*>(reinterpret_cast<const char*>(tp));
}

inline int* multiple_threads_of(const TcbHead* tp) {
    return const_cast<int*>(&tp->multiple_threads);
}

#endif

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
// ... and of list, the links of glibc's list of threads (AArch64 only: there a
// fiber's block is what pthread_self() and a fork's child see as the thread).
extern const std::uint32_t _thread_db_pthread_list[3];
// ... and of nextevent, which nptl/descr.h follows with
//   struct _Unwind_Exception exc;   void* stackblock;   size_t stackblock_size;
// the thread's stack, which pthread_exit's unwinding measures frames against
// (stackblock_at() below; L07_Tcb checks it on two threads).
extern const std::uint32_t _thread_db_pthread_nextevent[3];
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


// The offset of struct pthread's stackblock: past nextevent and an aligned
// _Unwind_Exception.
inline std::size_t stackblock_at() {
    constexpr std::size_t align = alignof(_Unwind_Exception);
    const std::size_t exception_at =
        (_thread_db_pthread_nextevent[2] + sizeof(void*) + align - 1) & ~(align - 1);
    return exception_at + sizeof(_Unwind_Exception);
}

}  // namespace fib
