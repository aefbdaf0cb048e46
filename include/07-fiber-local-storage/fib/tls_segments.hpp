// tls_segments.hpp — lesson 7: each loaded module's TLS segment, read from its ELF program headers.
//
// Every ELF module with thread_local variables (the executable, libc,
// libstdc++, a shared library of yours) has one PT_TLS program header:
//
//   p_vaddr/p_filesz   the .tdata image: initial values, copied into each new block
//   p_memsz            .tdata + .tbss: the rest of the block is zeroed
//   p_align            the block's alignment
//
// readelf -lW <binary> shows it as "TLS". At startup the dynamic linker gives
// each module loaded with the program a fixed place below the thread pointer,
// the same in every thread: `offset` below is that distance, measured on this
// thread. A statically linked program has a single segment that holds libc's
// and libstdc++'s thread_locals too.
#pragma once

#include <cstddef>
#include <span>

namespace fib {

struct TlsSegment {
    const char* module;       // the module's path; "" for the executable
    const void* image;        // .tdata's bytes
    std::size_t image_size;   // p_filesz
    std::size_t size;         // p_memsz
    std::size_t align;        // p_align
    std::size_t offset;       // the module's block starts at tp - offset
    bool c_library;           // libc's own block: errno, malloc's cache (not when static)
    bool sanitizer_runtime;   // AddressSanitizer's own block (SAN=1 builds only)
};

// The static TLS segments of the modules loaded now, read once.
std::span<const TlsSegment> tls_segments();

// Initialise the block of every segment below thread pointer `tp` from its
// image, except libc's and ASan's, which a reused block keeps (see
// TlsBlockPool::take for why).
void reset_tls_segments(void* tp);

}  // namespace fib
