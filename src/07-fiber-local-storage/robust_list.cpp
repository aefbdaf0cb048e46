// robust_list.cpp — lesson 7: a fiber that locks a robust mutex on its own TLS block stops with a message.
#include "fib/robust_list.hpp"

#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <mutex>

#include "fib/fatal.hpp"
#include "fib/fiber_manager.hpp"
#include "fib/overflow_guard.hpp"

namespace fib {
namespace {

struct RobustTrap {
    std::ptrdiff_t head_at = 0;  // robust_head's offset in struct pthread; 0: no robust list
    char* page = nullptr;        // PROT_NONE: glibc's first write lands here
};
RobustTrap trap;
struct sigaction previous_segv;

// The fault is synchronous, inside pthread_mutex_lock on the fiber's own
// stack, with no libc lock of this thread held: fatal()'s stdio is safe here.
void on_segv(int signal, siginfo_t* info, void* ucontext) {
    if (info->si_addr == trap.page) {
        FiberManager* manager = FiberManager::current();
        const FiberRecord* fiber = manager ? manager->running() : nullptr;
        fatal("%s locked a robust mutex, which a fiber with a TLS block of its own cannot: its "
              "block's half of the thread's robust list is one the kernel never sees (lesson 7, "
              "robust_list.hpp)",
              fiber ? label(*fiber).text : "a fiber");
    }
    hand_on_fault(previous_segv, signal, info, ucontext);  // not ours
}

// Where this thread's list head lies, from its thread pointer; 0 if nowhere.
// The kernel returns the address it was given: &struct pthread::robust_head,
// on the thread's own control block (never called on a fiber: TlsBlockPool is
// made outside them). Where the kernel does not say (qemu-user has no robust
// list system calls, and glibc keeps the list for itself alone), the head is
// found where nptl/descr.h puts it, after tid, an unused pid and robust_prev,
// and taken only if it is there: a list with no mutex in it points at itself.
std::ptrdiff_t find_robust_head() {
    char* const tp = reinterpret_cast<char*>(thread_pointer());
    void* head = nullptr;
    std::size_t length = 0;
    if (syscall(SYS_get_robust_list, 0, &head, &length) == 0)
        return head ? static_cast<char*>(head) - tp : 0;
    char* const candidate = descriptor_of(thread_pointer()) + _thread_db_pthread_tid[2] +
                            2 * sizeof(pid_t) + sizeof(void*);
    void* first_word;
    std::memcpy(&first_word, candidate, sizeof first_word);
    return first_word == candidate ? candidate - tp : 0;
}

void set_up_trap() {
    const std::ptrdiff_t head_at = find_robust_head();
    if (head_at == 0) return;
    void* page = mmap(nullptr, static_cast<std::size_t>(sysconf(_SC_PAGESIZE)), PROT_NONE,
                      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (page == MAP_FAILED) fatal("cannot map the robust-list trap page: %s", std::strerror(errno));
    trap.head_at = head_at;
    trap.page = static_cast<char*>(page);
    struct sigaction action {};
    action.sa_sigaction = on_segv;
    action.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&action.sa_mask);
    sigaction(SIGSEGV, &action, &previous_segv);
}

}  // namespace

void refuse_robust_mutexes(TcbHead* block) {
    static std::once_flag set_up;
    std::call_once(set_up, set_up_trap);
    if (trap.page == nullptr) return;  // no robust list: pthread_mutex_init refuses them itself
    // glibc's ENQUEUE_MUTEX reads the list word, clears its low bit, steps
    // back one pointer (to the entry's __prev) and stores there: with the word
    // at page + 8, that store faults at the page's first byte.
    void* list_word = trap.page + sizeof(void*);
    std::memcpy(reinterpret_cast<char*>(block) + trap.head_at, &list_word, sizeof list_word);
}

}  // namespace fib
