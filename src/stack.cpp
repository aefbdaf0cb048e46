// stack.cpp — lesson 1: mapping and unmapping stacks with a guard page.
#include "fib/stack.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <string>
#include <system_error>

namespace fib {

std::size_t page_size() {
    static const std::size_t size = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
    return size;
}

Stack::Stack(std::size_t usable_size) {
    const std::size_t page = page_size();
    size_ = (usable_size + page - 1) / page * page;
    // MAP_NORESERVE: untouched pages cost nothing, not even commit charge.
    // MAP_STACK: a hint that this is a stack (no transparent huge pages).
    void* mapping = mmap(nullptr, size_ + page, PROT_READ | PROT_WRITE,
                         MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
    // Each stack takes two kernel mappings (guard + usable); vm.max_map_count
    // (65530 by default) is what usually runs out first.
    if (mapping == MAP_FAILED)
        throw std::system_error(errno, std::generic_category(),
                                "mmap of a " + std::to_string(size_) +
                                    "-byte stack (live stacks are limited by vm.max_map_count)");
    // The lowest page becomes the guard: a stack that overflows hits it and
    // faults at once, instead of silently overwriting whatever lies below.
    if (mprotect(mapping, page, PROT_NONE) != 0) {
        const int error = errno;
        munmap(mapping, size_ + page);
        throw std::system_error(error, std::generic_category(), "mprotect of a stack guard page");
    }
    bottom_ = static_cast<char*>(mapping) + page;
}

Stack::~Stack() {
    if (bottom_) munmap(bottom_ - page_size(), size_ + page_size());
}

bool Stack::guard_contains(const void* address) const {
    const char* byte = static_cast<const char*>(address);
    return bottom_ && byte >= bottom_ - page_size() && byte < bottom_;
}

}  // namespace fib
