// tls_segments.cpp — lesson 7: finding every module's PT_TLS header with dl_iterate_phdr.
#include "fib/tls_segments.hpp"

#include <dlfcn.h>
#include <elf.h>
#include <link.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <vector>

#if defined(__aarch64__)
#include <atomic>
#include <deque>
#include <mutex>
#endif

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
    std::vector<std::size_t>* unseen;  // AArch64: modules with no block on this one yet
    std::uintptr_t tp;           // this thread's thread pointer
    std::size_t static_size;     // the static TLS area below it (above it on AArch64)
    const char* sanitizer;       // sanitizer_module()
};

// Called once per loaded module, with its program headers. dlpi_tls_data is
// this thread's copy of the module's block (nullptr if it has none yet).
int visit_module(dl_phdr_info* info, std::size_t, void* data) {
    auto& search = *static_cast<Search*>(data);
    for (int i = 0; i < info->dlpi_phnum; ++i) {
        const ElfW(Phdr)& header = info->dlpi_phdr[i];
        if (header.p_type != PT_TLS) continue;
        auto block = reinterpret_cast<std::uintptr_t>(info->dlpi_tls_data);
#if defined(__aarch64__)
        // A module dlopen'ed since this block's DTV was last brought up to date
        // has no block here yet, as far as glibc's DTV says: find where it lies
        // once the lock dl_iterate_phdr holds is released (read_segments).
        if (block == 0 && search.unseen) {
            search.unseen->push_back(info->dlpi_tls_modid);
            continue;
        }
#endif
        // A module dlopen'ed later gets its TLS on demand, elsewhere: not ours.
#if defined(__aarch64__)
        if (block == 0 || block < search.tp || block - search.tp > search.static_size) continue;
        const std::uintptr_t offset = block - search.tp;
#else
        if (block == 0 || block >= search.tp || search.tp - block > search.static_size) continue;
        const std::uintptr_t offset = search.tp - block;
#endif
        const auto errno_at = reinterpret_cast<std::uintptr_t>(&errno);
        search.found->push_back(TlsSegment{
            .module = info->dlpi_name,
            .image = reinterpret_cast<const void*>(info->dlpi_addr + header.p_vaddr),
            .image_size = header.p_filesz,
            .size = header.p_memsz,
            .align = header.p_align,
            .offset = offset,
            // Statically linked, libc's variables are the executable's ("").
            .c_library = errno_at >= block && errno_at < block + header.p_memsz &&
                         info->dlpi_name[0] != '\0',
            .sanitizer_runtime = search.sanitizer && std::strcmp(info->dlpi_name, search.sanitizer) == 0,
        });
    }
    return 0;
}

#if defined(__aarch64__)

struct TlsIndex {
    unsigned long module;
    unsigned long offset;
};
extern "C" void* __tls_get_addr(TlsIndex* index);  // ld.so: brings this block's DTV up to date

std::vector<TlsSegment> read_segments() {
    std::vector<TlsSegment> segments;
    std::vector<std::size_t> unseen;
    std::size_t static_size = 0, static_align = 0;
    _dl_get_tls_static_info(&static_size, &static_align);
    Search search{&segments, &unseen, reinterpret_cast<std::uintptr_t>(thread_pointer()),
                  static_size, sanitizer_module()};
    dl_iterate_phdr(&visit_module, &search);
    // __tls_get_addr updates this block's DTV and says where each such module
    // lies; dl_iterate_phdr then reports it like the others. (A module with
    // dynamic TLS gets its block allocated here, on this block.)
    if (!unseen.empty()) {
        for (std::size_t module : unseen) {
            TlsIndex index{module, 0};
            __tls_get_addr(&index);
        }
        segments.clear();
        search.unseen = nullptr;
        dl_iterate_phdr(&visit_module, &search);
    }
    if (segments.empty()) fatal("no PT_TLS segment found; is errno not thread-local here?");
    return segments;
}

// How many modules were ever loaded and unloaded: dl_iterate_phdr says so
// with the first one. A change means the list may hold a module gone since.
unsigned long long modules_changed() {
    unsigned long long changes = 0;
    dl_iterate_phdr(
        [](dl_phdr_info* info, std::size_t, void* result) {
            *static_cast<unsigned long long*>(result) = info->dlpi_adds + info->dlpi_subs;
            return 1;
        },
        &changes);
    return changes;
}

// On AArch64 a library dlopen'ed later may get its TLS in the static area
// too: g++ reaches a shared library's TLS through TLS descriptors there, and
// glibc gives such a module spare static room when it has some (up to
// glibc.rtld.optional_static_tls bytes). Every list read is kept, so that a
// span handed out stays valid; a newer one is read when a module was loaded
// since (or unloaded: its image is gone), and counts as a new generation when
// it holds more segments.
struct SegmentLists {
    std::mutex mutex;
    std::deque<std::vector<TlsSegment>> lists;
    std::atomic<const std::vector<TlsSegment>*> current{nullptr};
    unsigned long long changes = 0;
    std::atomic<std::uint64_t> generation{0};
};

SegmentLists& segment_lists() {
    static SegmentLists lists;
    return lists;
}

}  // namespace

std::span<const TlsSegment> tls_segments() {
    SegmentLists& lists = segment_lists();
    const unsigned long long changes = modules_changed();
    std::lock_guard lock(lists.mutex);
    if (lists.current == nullptr || changes != lists.changes) {
        const std::size_t known = lists.current ? lists.current.load()->size() : 0;
        lists.lists.push_back(read_segments());
        lists.changes = changes;
        if (lists.current && lists.lists.back().size() > known) ++lists.generation;
        lists.current = &lists.lists.back();
    }
    return *lists.current.load();
}

std::uint64_t tls_segments_generation() {
    tls_segments();
    return segment_lists().generation;
}

#else

std::vector<TlsSegment> read_segments() {
    std::vector<TlsSegment> segments;
    std::size_t static_size = 0, static_align = 0;
    _dl_get_tls_static_info(&static_size, &static_align);
    Search search{&segments, nullptr, reinterpret_cast<std::uintptr_t>(thread_pointer()), static_size,
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

#endif

// The article's step, per module: copy .tdata, zero .tbss.
void reset_tls_segments(void* tp) {
    for (const TlsSegment& segment : tls_segments()) {
        if (segment.c_library || segment.sanitizer_runtime) continue;
        char* block = segment_block(tp, segment);
        std::memcpy(block, segment.image, segment.image_size);
        std::memset(block + segment.image_size, 0, segment.size - segment.image_size);
    }
}

}  // namespace fib
