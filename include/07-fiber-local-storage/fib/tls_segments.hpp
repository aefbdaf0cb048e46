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
// each module loaded with the program a fixed place below the thread pointer
// (above it on AArch64), the same in every thread: `offset` below is that
// distance, measured on this thread. A statically linked program has a single
// segment that holds libc's and libstdc++'s thread_locals too.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace fib {

struct TlsSegment {
    const char* module;       // the module's path; "" for the executable
    const void* image;        // .tdata's bytes
    std::size_t image_size;   // p_filesz
    std::size_t size;         // p_memsz
    std::size_t align;        // p_align
    std::size_t offset;       // the module's block starts at tp - offset (AArch64: tp + offset)
    bool c_library;           // libc's own block: errno, malloc's cache (not when static)
    bool sanitizer_runtime;   // AddressSanitizer's own block (SAN=1 builds only)
};

// Where the segment's block starts in the block of thread pointer `tp`.
inline char* segment_block(void* tp, const TlsSegment& segment) {
#if defined(__aarch64__)
    return static_cast<char*>(tp) + segment.offset;
#else
    return static_cast<char*>(tp) - segment.offset;
#endif
}

// The static TLS segments of the modules loaded now, read once (on AArch64,
// read again after a module was loaded: see tls_segments.cpp).
std::span<const TlsSegment> tls_segments();

#if defined(__aarch64__)
// Grows by one each time a module dlopen'ed later took static TLS. A block
// made, or last reset, before that holds zeros where the module's .tdata
// belongs, and glibc never fills it in: it copies a new module's image only
// into the blocks of the threads it knows (TlsBlockPool::fiber_ending stops).
std::uint64_t tls_segments_generation();
#endif

// Initialise the block of every segment below thread pointer `tp` from its
// image, except libc's and ASan's, which a reused block keeps (see
// TlsBlockPool::take for why).
void reset_tls_segments(void* tp);

}  // namespace fib
