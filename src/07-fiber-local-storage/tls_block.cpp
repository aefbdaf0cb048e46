// tls_block.cpp — lesson 7: making a TLS block that libc, libstdc++ and the compiler accept as a thread's.
#include "fib/tls_block.hpp"

#include <locale.h>
#include <resolv.h>
#include <sys/types.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>

#include "fib/fatal.hpp"
#include "fib/fiber_manager.hpp"
#include "fib/robust_list.hpp"
#include "fib/thread_protocols.hpp"
#include "fib/tls_segments.hpp"

namespace fib {
namespace {

// The kernel thread id, %fs-relative in glibc: an error-checking or recursive
// mutex records its owner by it, and a zero owner reads as "unlocked". Copied
// each time a block is handed out: after a fork, the thread's is the child's.
void copy_tid(TcbHead* block, const TcbHead* thread) {
    const std::uint32_t tid_at = _thread_db_pthread_tid[2];
    std::memcpy(descriptor_of(block) + tid_at, descriptor_of(thread) + tid_at, sizeof(pid_t));
}

// A recycled block must start as a new thread would: the TLS of every
// dlopen'ed module not yet allocated. Its objects were destroyed at the last
// fiber's end (__call_tls_dtors), but its guard variables, inside the block,
// still say "constructed". Freed here, the next fiber's first access
// allocates the module's block afresh from its image, as in a new thread.
void release_dynamic_tls(TcbHead* tp) {
    DtvEntry* dtv = static_cast<DtvEntry*>(tp->dtv);
    for (std::size_t module = 1; module <= dtv[-1].counter; ++module) {
        if (dtv[module].pointer.to_free == nullptr) continue;  // static, or never allocated
        std::free(dtv[module].pointer.to_free);
        dtv[module].pointer.val = kDtvUnallocated;
        dtv[module].pointer.to_free = nullptr;
    }
}

#if defined(__aarch64__)
// glibc's first block of pthread key values: 32 of {sequence number, value}.
constexpr std::size_t kFirstKeysBytes = 32 * 2 * sizeof(void*);

// AArch64: THREAD_SELF is tp - sizeof(struct pthread), so every field glibc
// reaches through it is the block's own: pthread_self() on a fiber is its
// block's descriptor. _dl_allocate_tls zeroed it; fill what code running on
// it reads, as pthread_create fills a new thread's.
void fill_descriptor(TcbHead* block, TcbHead* thread) {
    char* descriptor = descriptor_of(block);
    // glibc never reads tcbhead_t's `private` word: ours names the thread, for
    // the handler that must run on the thread's block and for the check that
    // the thread was not cancelled (thread_protocols.cpp).
    block->thread = thread;
    // 0 would let libc drop the barriers and exclusive accesses from its
    // atomics while other threads run: claim there are many, always.
    *multiple_threads_of(block) = 1;
    // A fork's child takes the running descriptor out of glibc's list of
    // threads (list_del) before it puts it back as the only one: linked to
    // itself, as an empty list is, taking it out changes nothing.
    void** list = reinterpret_cast<void**>(descriptor + _thread_db_pthread_list[2]);
    list[0] = list[1] = list;
    // pthread_exit() unwinds until a frame lies beyond the thread's unwind
    // buffer, measured from the end of the thread's stack (stackblock plus
    // its size: an address above it counts as below the buffer). With zeros,
    // a fiber stack above the thread's (as qemu-user lays them out) looks
    // like the thread's outermost frame, and glibc longjmps out at once: the
    // thread would end in silence instead of reaching fiber_main's message.
    const std::size_t stack_at = stackblock_at();
    std::memcpy(descriptor + stack_at, descriptor_of(thread) + stack_at, 2 * sizeof(void*));
    // The values of the first 32 pthread keys lie inside struct pthread, and
    // specific[0] points at them: at the block's own, as for a new thread.
    const std::size_t specific_at = _thread_db_pthread_specific[2];
    char* threads_first;
    std::memcpy(&threads_first, descriptor_of(thread) + specific_at, sizeof threads_first);
    char* first = descriptor + (threads_first - descriptor_of(thread));
    std::memcpy(descriptor + specific_at, &first, sizeof first);
}

// The tls_segments_generation() this block was last reset at. Static TLS,
// so at the same offset from tp in every block: take() writes the copy in
// the block it hands out with in_block().
constinit thread_local std::uint64_t block_generation = 0;

template <class T>
T& in_block(TcbHead* block, T& variable) {
    const std::ptrdiff_t offset =
        reinterpret_cast<char*>(&variable) - reinterpret_cast<char*>(thread_pointer());
    return *reinterpret_cast<T*>(reinterpret_cast<char*>(block) + offset);
}

// On the fiber: a module that took static TLS since its block was reset has
// zeros in it where its thread_locals' initial values belong.
void refuse_stale_static_tls() {
    if (block_generation == tls_segments_generation()) return;
    FiberManager* manager = FiberManager::current();
    fatal("%s runs on a TLS block made before a library with static TLS was dlopen'ed: its "
          "copy of that library's thread_locals was never initialised and reads zeros; dlopen "
          "such libraries before the fibers start, or run with "
          "GLIBC_TUNABLES=glibc.rtld.optional_static_tls=0 (lesson 7, tls_segments.hpp)",
          manager ? label(*manager->running()).text : "a fiber");
}

// The first block of pthread key values, cleared for the next fiber: a key
// whose slot's sequence number does not match reads as null.
void clear_first_keys(TcbHead* block) {
    char* first;
    std::memcpy(&first, descriptor_of(block) + _thread_db_pthread_specific[2], sizeof first);
    std::memset(first, 0, kFirstKeysBytes);
}
#endif

}  // namespace

TlsBlockPool::TlsBlockPool() : thread_(thread_pointer()), resolver_(__res_state()) {
    prepare_thread_protocols();
}

TlsBlockPool::~TlsBlockPool() {
    for (TcbHead* tp : free_) _dl_deallocate_tls(tp, true);
}

// A new block. _dl_allocate_tls (what pthread_create uses) gives it a DTV of
// its own: with the thread's DTV, libstdc++'s exception state and every
// shared library's thread_local would stay the thread's, shared by all
// fibers. Its struct pthread comes zeroed; we fill the fields that code
// running on it reads.
TcbHead* TlsBlockPool::make_block() {
    auto* block = static_cast<TcbHead*>(_dl_allocate_tls(nullptr));
    if (!block) throw std::bad_alloc();
    ++created_;
#if defined(__aarch64__)
    fill_descriptor(block, thread_);
#else
    block->tcb = block;  // `mov %fs:0` must read tp, or no thread_local is found
    // self is who runs: the thread. What glibc reaches through it (pthread_self,
    // cancellation, fork's list of threads, the first 32 pthread keys) is the
    // thread's, and so is what other threads and the kernel see.
    block->self = thread_;
    // 0 would let libc drop the lock prefix from its atomics while other
    // threads run: claim there are many, always (thread_protocols.hpp).
    block->multiple_threads = 1;
    block->sysinfo = thread_->sysinfo;
    // The same canary and pointer guard as the thread's: a frame entered on
    // one block and left on another, or a function pointer mangled on one
    // (atexit, setjmp) and demangled on another, must still agree.
    block->stack_guard = thread_->stack_guard;
    block->pointer_guard = thread_->pointer_guard;
    block->feature_1 = thread_->feature_1;
#endif
    // pthread_exit() and pthread_cancel() unwind the stack with glibc's stop
    // function, which dereferences this and longjmps there once a frame lies
    // beyond it. The thread's own lies on the thread's stack, and a fiber's
    // frames never do, so the unwinding reaches fiber_main's catch, which
    // stops with a message (lesson 2). A null one would be a segfault.
    const std::size_t jmp_buf_at = cleanup_jmp_buf_at();
    std::memcpy(descriptor_of(block) + jmp_buf_at, descriptor_of(thread_) + jmp_buf_at, sizeof(void*));
    // The kernel keeps the CPU number in the thread's registered rseq area,
    // not in ours; -2 ("registration failed") makes sched_getcpu() ask it
    // instead of reading a silent 0. Whether or not the thread registered one:
    // pthread_create reads the creator's to decide whether the new thread
    // registers, and aborts the new thread when that fails
    // (L07_Protocols.ThreadStartedFromATlsFiberRunsWhereRseqCannotRegister).
    int cpu_id = -2;
    std::memcpy(reinterpret_cast<char*>(block) + __rseq_offset + sizeof(std::uint32_t), &cpu_id,
                sizeof cpu_id);
    refuse_robust_mutexes(block);
    return block;
}

// Every module's TLS starts from its image, as in a new thread: thread_local
// counters at their initial values, and the guards of dynamically initialised
// thread_locals cleared so they are constructed again. Except the C library's
// own block (a module of its own unless linked statically): it holds malloc's
// per-thread cache, which a fresh block would make malloc allocate anew (about
// 1.3 KiB, never freed: only a thread's exit frees it), so a recycled block
// keeps its cache. Statically linked, fiber_ending() frees it instead. (In an
// ASan build, ASan's own block is kept too: it tracks the block's dynamic TLS
// in memory it maps once per block.)
TcbHead* TlsBlockPool::take() {
    TcbHead* tp;
    if (free_.empty()) {
        tp = make_block();
    } else {
        tp = free_.back();
        free_.pop_back();
    }
    copy_tid(tp, thread_);
    reset_tls_segments(tp);
#if defined(__aarch64__)
    in_block(tp, block_generation) = tls_segments_generation();
#endif
    return tp;
}

void TlsBlockPool::give_back(TcbHead* tp) {
    release_dynamic_tls(tp);
#if defined(__aarch64__)
    clear_first_keys(tp);
#endif
    free_.push_back(tp);
}

// A new thread starts with errno 0 and the global locale, and pthread_create
// sets its ctype table pointers (TLS, zero in libc's image: without them
// isalpha() reads through a null pointer). uselocale() sets the locale and
// those pointers at once. It matters on a recycled block too: libc's TLS is
// not reset (take(), above), so it still holds its last fiber's errno and
// locale. pthread_create also points the thread's resolver state (__resp)
// at its own; libc's image says main's, and a worker thread's fibers would
// share main's with main: they get their thread's. Fibers of one thread may
// share it, as a resolver call never parks a fiber halfway.
void TlsBlockPool::fiber_starting() const {
#if defined(__aarch64__)
    refuse_cancellation_on_fiber();
    refuse_stale_static_tls();
#endif
    errno = 0;
    uselocale(LC_GLOBAL_LOCALE);
    __resp = resolver_;
}

// What a thread's exit does with its TLS: destroy the thread_local objects
// constructed on this block, and (statically linked) free malloc's cache.
void TlsBlockPool::fiber_ending() {
#if defined(__aarch64__)
    refuse_cancellation_on_fiber();
    refuse_stale_static_tls();
#endif
    __call_tls_dtors();
    if (__libc_thread_freeres) __libc_thread_freeres();
}

}  // namespace fib
