// L07_dlopen_test.cpp — lesson 7: a module dlopen'ed while fibers run has its TLS allocated on
// demand, behind each block's DTV. A recycled block must not hand the next fiber the last one's
// objects, destroyed at its end but still marked constructed: 1,000 fibers one after another
// each find the library's thread_local freshly constructed, and every one is destroyed once.
// The DTV's layout (DtvEntry in glibc_tls.hpp) is checked against dl_iterate_phdr.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <link.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <string>

#include "fib/fiber.hpp"
#include "fib/fiber_tls.hpp"
#include "fib/glibc_tls.hpp"
#include "fib/tls_segments.hpp"

#ifndef FIB_STATIC
extern "C" int* l06_probe_counter();  // tests/L07_probe_lib.cpp, linked in
#endif

namespace {

// Every module with TLS: its slot in the running thread's DTV points at its block.
int check_module(dl_phdr_info* info, std::size_t, void* mismatches) {
    if (info->dlpi_tls_modid == 0 || info->dlpi_tls_data == nullptr) return 0;
    const auto* dtv = static_cast<const fib::DtvEntry*>(fib::thread_pointer()->dtv);
    if (info->dlpi_tls_modid > dtv[-1].counter ||
        dtv[info->dlpi_tls_modid].pointer.val != info->dlpi_tls_data)
        ++*static_cast<int*>(mismatches);
    return 0;
}

TEST(L07_Dtv, EachModulesSlotPointsAtItsBlockInTheRunningThread) {
    int mismatches = 0;
    dl_iterate_phdr(&check_module, &mismatches);
    EXPECT_EQ(mismatches, 0);
}

// A second copy of the probe library, dlopen'ed from a file of its own: a new module.
struct LoadedCopy {
    std::string path;
    void* handle = nullptr;
    explicit LoadedCopy(const char* original) {
        path = (std::filesystem::temp_directory_path() /
                ("L07_dlopen_copy_" + std::to_string(getpid()) + ".so"))
                   .string();
        std::filesystem::copy_file(original, path, std::filesystem::copy_options::overwrite_existing);
        handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    }
    ~LoadedCopy() {
        if (handle) dlclose(handle);
        std::filesystem::remove(path);
    }
    template <class F>
    F* function(const char* name) const { return reinterpret_cast<F*>(dlsym(handle, name)); }
};

TEST(L07_Dtv, ADlopenedLibrarysThreadLocalIsFreshInEachOfAThousandRecycledFibers) {
#ifdef FIB_STATIC
    GTEST_SKIP() << "statically linked: there is no shared library to copy";
#else
    Dl_info linked{};
    ASSERT_NE(dladdr(reinterpret_cast<void*>(&l06_probe_counter), &linked), 0);
    fib::FiberManager manager;
    fib::FiberTls tls(manager);  // before the dlopen: the module is new to every block
    // As any earlier fiber would have: the segments were read before the dlopen.
    ASSERT_FALSE(fib::tls_segments().empty());
    LoadedCopy copy(linked.dli_fname);
    ASSERT_NE(copy.handle, nullptr) << dlerror();
    auto* was_fresh = copy.function<bool()>("l07_probe_tracked_was_fresh");
    auto* constructed = copy.function<int()>("l07_probe_constructed");
    auto* destroyed = copy.function<int()>("l07_probe_destroyed");
    int stale = 0;
    for (int i = 0; i < 1000; ++i) {
        fib::Fiber user([&] { stale += !was_fresh(); });
        user.join();
    }
    EXPECT_EQ(stale, 0);
    EXPECT_EQ(constructed(), 1000);
    EXPECT_EQ(destroyed(), 1000);
    EXPECT_EQ(tls.stats().tls_blocks_created, 1u);
#endif
}

// On AArch64, g++ reaches a shared library's TLS through TLS descriptors, and glibc gives a
// dlopen'ed module room in the static area while it has some: a block made before then has
// zeros there, which glibc fills in only for the threads it knows. A fiber on such a block stops,
// naming itself, as it ends (tls_segments.hpp).
#if defined(__aarch64__) && !defined(FIB_STATIC)
void dlopen_while_a_tls_fiber_is_alive() {
    Dl_info linked{};
    if (dladdr(reinterpret_cast<void*>(&l06_probe_counter), &linked) == 0) std::_Exit(3);
    fib::FiberManager manager;
    fib::FiberTls tls(manager);
    fib::Fiber early({.name = "early"}, [] { fib::this_fiber::yield(); });
    fib::this_fiber::yield();  // early starts on its block, and yields back
    LoadedCopy copy(linked.dli_fname);
    early.join();
}
#endif

TEST(L07_DtvDeathTest, ADlopenThatTakesStaticTlsWhileATlsFiberIsAliveStopsNamingIt) {
#if !defined(__aarch64__)
    GTEST_SKIP() << "x86-64: g++ reaches a shared library's TLS through __tls_get_addr, and every "
                    "block allocates it on demand (the test above)";
#elif defined(FIB_STATIC)
    GTEST_SKIP() << "statically linked: there is no shared library to copy";
#else
    EXPECT_DEATH(dlopen_while_a_tls_fiber_is_alive(),
                 "fib: fatal: fiber 1 \\(early\\) runs on a TLS block made before a library "
                 "with static TLS was dlopen'ed");
#endif
}

}  // namespace
