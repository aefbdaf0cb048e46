// registry.cpp — lesson 2: every live FiberManager in one list, the root a debugger starts from.
//
// The scheduler itself needs no such list: each thread finds its manager through
// current_, a thread_local. A debugger has no such start: gdb reads a
// thread_local through libthread_db, one thread at a time, and only where that
// can read the thread library's own state, which not every program or core
// file allows. A global has one address, written in the binary's debug info,
// for every thread and in a core file. So each manager puts itself in
// registry_ when it is made and takes itself out when it is destroyed, with
// its thread's id (gettid), which gdb shows as the thread's LWP.
// scripts/fib_gdb.py walks this list: `info fibers`, `fiber bt`. The library
// asks it too, whether a manager still lives (alive()).
#include <unistd.h>

#include <mutex>

#include "fib/fiber_manager.hpp"

namespace fib {
namespace {

// Managers of different threads come and go at the same time.
std::mutex registry_mutex;

}  // namespace

IntrusiveList<FiberManager, &FiberManager::registry_link_> FiberManager::registry_;

void FiberManager::enlist() {
    thread_id_ = gettid();
    std::lock_guard lock(registry_mutex);
    registry_.push_back(this);
}

void FiberManager::delist() {
    std::lock_guard lock(registry_mutex);
    registry_.remove(this);
}

bool FiberManager::alive(const FiberManager* manager, int thread_id) {
    std::lock_guard lock(registry_mutex);
    for (const FiberManager* live = registry_.front(); live; live = registry_.next(live))
        if (live == manager && live->thread_id_ == thread_id) return true;
    return false;
}

}  // namespace fib

// gdb's commands for fibers (scripts/fib_gdb.py), carried in the binary itself:
// gdb runs a script it finds in a .debug_gdb_scripts section when it loads the
// binary, also to read a core file of it. An entry is a type byte (4: Python
// source), a first line naming the script, its text, and a NUL. The section is
// not loaded into memory. gdb runs it only from a directory it was told to trust:
// lessons/02-fibers/APPENDIX.md says how.
asm(R"(
    .pushsection .debug_gdb_scripts, "MS", @progbits, 1
    .byte 4
    .ascii "fib_gdb.py\n"
    .incbin "scripts/fib_gdb.py"
    .byte 0
    .popsection
)");
