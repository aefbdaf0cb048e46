// tls_segments.cpp — lesson 7: finding every module's PT_TLS header with dl_iterate_phdr.
#include "fib/tls_segments.hpp"

#include <dlfcn.h>
#include <elf.h>
#include <link.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <vector>

#include "fib/fatal.hpp"
#include "fib/glibc_tls.hpp"
#include "fib/sanitizer.hpp"

namespace fib {
namespace {

// The path of the module that holds AddressSanitizer's runtime, or nullptr
// when this is not an ASan build.
const char* sanitizer_module() {
#if defined(__SANITIZE_ADDRESS__)
    Dl_info info{};
    if (dladdr(reinterpret_cast<void*>(&__sanitizer_start_switch_fiber), &info)) return info.dli_fname;
#endif
    return nullptr;
}

struct Search {
    std::vector<TlsSegment>* found;
    std::uintptr_t tp;           // this thread's thread pointer
    std::size_t static_size;     // the static TLS area below it
    const char* sanitizer;       // sanitizer_module()
};

// Called once per loaded module, with its program headers. dlpi_tls_data is
// this thread's copy of the module's block (nullptr if it has none yet).
int visit_module(dl_phdr_info* info, std::size_t, void* data) {
    auto& search = *static_cast<Search*>(data);
    for (int i = 0; i < info->dlpi_phnum; ++i) {
        const ElfW(Phdr)& header = info->dlpi_phdr[i];
        if (header.p_type != PT_TLS) continue;
        const auto block = reinterpret_cast<std::uintptr_t>(info->dlpi_tls_data);
        // A module dlopen'ed later gets its TLS on demand, elsewhere: not ours.
        if (block == 0 || block >= search.tp || search.tp - block > search.static_size) continue;
        const auto errno_at = reinterpret_cast<std::uintptr_t>(&errno);
        search.found->push_back(TlsSegment{
            .module = info->dlpi_name,
            .image = reinterpret_cast<const void*>(info->dlpi_addr + header.p_vaddr),
            .image_size = header.p_filesz,
            .size = header.p_memsz,
            .align = header.p_align,
            .offset = search.tp - block,
            // Statically linked, libc's variables are the executable's ("").
            .c_library = errno_at >= block && errno_at < block + header.p_memsz &&
                         info->dlpi_name[0] != '\0',
            .sanitizer_runtime = search.sanitizer && std::strcmp(info->dlpi_name, search.sanitizer) == 0,
        });
    }
    return 0;
}

std::vector<TlsSegment> read_segments() {
    std::vector<TlsSegment> segments;
    std::size_t static_size = 0, static_align = 0;
    _dl_get_tls_static_info(&static_size, &static_align);
    Search search{&segments, reinterpret_cast<std::uintptr_t>(thread_pointer()), static_size,
                  sanitizer_module()};
    dl_iterate_phdr(&visit_module, &search);
    if (segments.empty()) fatal("no PT_TLS segment found; is errno not thread-local here?");
    return segments;
}

}  // namespace

std::span<const TlsSegment> tls_segments() {
    static const std::vector<TlsSegment> segments = read_segments();
    return segments;
}

// The article's step, per module: copy .tdata, zero .tbss.
void reset_tls_segments(void* tp) {
    for (const TlsSegment& segment : tls_segments()) {
        if (segment.c_library || segment.sanitizer_runtime) continue;
        char* block = static_cast<char*>(tp) - segment.offset;
        std::memcpy(block, segment.image, segment.image_size);
        std::memset(block + segment.image_size, 0, segment.size - segment.image_size);
    }
}

}  // namespace fib
