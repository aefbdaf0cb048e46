// stack.cpp — lesson 1: mapping and unmapping stacks with a guard region.
#include "fib/stack.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <string>
#include <system_error>

// Linux 6.13's guard regions; glibc 2.36's headers predate them.
#ifndef MADV_GUARD_INSTALL
#define MADV_GUARD_INSTALL 102
#endif

namespace fib {
namespace {

// Makes the mapping's lowest `size` bytes the guard. Linux 6.13+ can mark them
// a guard region inside the mapping (MADV_GUARD_INSTALL): the stack stays one
// kernel mapping, and neighbouring stacks even merge into one. Older kernels
// say EINVAL, and the pages become PROT_NONE instead, which splits the mapping
// in two: then vm.max_map_count (65530 by default) allows ~32,000 live stacks.
int install_guard(void* mapping, std::size_t size) {
    if (guard_regions()) return madvise(mapping, size, MADV_GUARD_INSTALL);
    return mprotect(mapping, size, PROT_NONE);
}

// Installs a guard region on a scratch page and asks the kernel to read it: a
// write(2) from it to a pipe must fail with EFAULT, with no signal. An emulator
// may say yes to the madvise and do nothing (qemu-user does), and then the
// write succeeds.
bool guard_region_faults() {
    const std::size_t page = page_size();
    void* scratch = mmap(nullptr, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (scratch == MAP_FAILED) return false;
    bool faults = false;
    int pipe_ends[2];
    if (madvise(scratch, page, MADV_GUARD_INSTALL) == 0 && pipe2(pipe_ends, O_CLOEXEC) == 0) {
        faults = write(pipe_ends[1], scratch, 1) < 0 && errno == EFAULT;
        close(pipe_ends[0]);
        close(pipe_ends[1]);
    }
    munmap(scratch, page);
    return faults;
}

}  // namespace

std::size_t page_size() {
    static const std::size_t size = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
    return size;
}

bool guard_regions() {
    static const bool faulting = guard_region_faults();  // probed once per process
    return faulting;
}

Stack::Stack(std::size_t usable_size) {
    const std::size_t page = page_size();
    size_ = (usable_size + page - 1) / page * page;
    // MAP_NORESERVE: untouched pages cost nothing, not even commit charge.
    // MAP_STACK: a hint that this is a stack (no transparent huge pages).
    void* mapping = mmap(nullptr, kGuardSize + size_, PROT_READ | PROT_WRITE,
                         MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
    // vm.max_map_count is what usually runs out first (see install_guard).
    if (mapping == MAP_FAILED)
        throw std::system_error(errno, std::generic_category(),
                                "mmap of a " + std::to_string(size_) +
                                    "-byte stack (live stacks are limited by vm.max_map_count)");
    // The lowest kGuardSize bytes become the guard: a stack that overflows hits
    // them and faults at once, instead of silently overwriting what lies below.
    if (install_guard(mapping, kGuardSize) != 0) {
        const int error = errno;
        munmap(mapping, kGuardSize + size_);
        throw std::system_error(error, std::generic_category(), "guarding a stack's lowest pages");
    }
    bottom_ = static_cast<char*>(mapping) + kGuardSize;
}

void Stack::unmap() { munmap(bottom_ - kGuardSize, kGuardSize + size_); }

bool Stack::guard_contains(const void* address) const {
    const char* byte = static_cast<const char*>(address);
    return bottom_ && byte >= bottom_ - kGuardSize && byte < bottom_;
}

}  // namespace fib
