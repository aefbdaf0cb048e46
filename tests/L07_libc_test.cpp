// L07_libc_test.cpp — lesson 7: libc features that read the control block work in a fiber with its own TLS.
//
// Each of these reads a field that TlsBlockPool::make_block copies from the
// thread or that fiber_starting sets up: setjmp/longjmp and atexit mangle
// pointers with the pointer guard (%fs:0x30), so a handler registered on a
// fiber must still demangle on main at exit; isalpha and toupper read the
// ctype table pointers that fiber_starting sets with the locale; errno and the
// locale start as a new thread's, on a recycled block too; an error-checking
// or recursive mutex records its owner by the tid in struct pthread; and a
// function built with -fstack-protector-strong compares the canary at %fs:0x28
// on its way out.
// The last test is about one more runtime with per-thread state: ASan's.
#include <gtest/gtest.h>
#include <locale.h>
#include <pthread.h>
#include <unistd.h>

#include <array>
#include <cctype>
#include <cerrno>
#include <csetjmp>
#include <cstdint>
#include <cstdlib>
#include <vector>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/common_interface_defs.h>
#endif

#include "fib/fiber.hpp"
#include "fib/fiber_tls.hpp"

// tests/L07_stack_protector.cpp, compiled with -fstack-protector-strong.
int l06_protected_sum(int n, void (*between)());

namespace {

// setjmp, a yield (other fibers run, each on its own block), then longjmp back.
int jump_back_after_a_yield(int value) {
    std::jmp_buf target;
    volatile int yields = 0;
    const int delivered = setjmp(target);
    if (delivered == 0) {
        fib::this_fiber::yield();
        yields = yields + 1;
        std::longjmp(target, value);
    }
    return yields == 1 ? delivered : -1;
}

TEST(L07_Libc, SetjmpAndLongjmpAcrossAYieldInFibers) {
    fib::FiberManager manager;
    fib::FiberTls tls(manager);
    std::array<int, 2> delivered{};
    fib::Fiber first([&] { delivered[0] = jump_back_after_a_yield(11); });
    fib::Fiber second([&] { delivered[1] = jump_back_after_a_yield(22); });
    first.join();
    second.join();
    EXPECT_EQ(delivered, (std::array<int, 2>{11, 22}));
}

// Ends the process itself: handlers run in reverse order of registration, so
// this one runs before LeakSanitizer's exit-time check (SAN=1), which would
// report the test objects that std::exit left behind and exit with 1.
void report_at_exit() {
    const char message[] = "atexit ran\n";
    if (write(STDERR_FILENO, message, sizeof message - 1) < 0) std::_Exit(3);
    std::_Exit(0);
}

// In the death-test child: the handler is registered on a fiber's block and
// runs on main's, at exit; a pointer guard that differed would crash it.
void register_on_a_fiber_then_exit() {
    {
        fib::FiberManager manager;
        fib::FiberTls tls(manager);
        int registered = -1;
        fib::Fiber fiber([&] { registered = std::atexit(report_at_exit); });
        fiber.join();
        if (registered != 0) std::_Exit(2);
    }
    std::exit(0);
}

TEST(L07_LibcDeathTest, AtexitHandlerRegisteredOnAFiberRunsAtExitOnMain) {
    EXPECT_EXIT(register_on_a_fiber_then_exit(), testing::ExitedWithCode(0), "atexit ran");
}

// What <cctype> answers on the fiber, packed for comparison.
struct CtypeAnswers {
    bool alpha_a = false, alpha_1 = true, digit_7 = false, digit_x = true;
    int upper_q = 0, lower_z = 0;
    bool operator==(const CtypeAnswers&) const = default;
};

CtypeAnswers ask_ctype() {
    CtypeAnswers answers;
    answers.alpha_a = std::isalpha('a') != 0;
    answers.alpha_1 = std::isalpha('1') != 0;
    answers.digit_7 = std::isdigit('7') != 0;
    answers.digit_x = std::isdigit('x') != 0;
    answers.upper_q = std::toupper('q');
    answers.lower_z = std::tolower('Z');
    return answers;
}

TEST(L07_Libc, CtypeWorksInANewAndInARecycledBlock) {
    fib::FiberManager manager;
    fib::FiberTls tls(manager);
    CtypeAnswers on_new, on_recycled;
    fib::Fiber first([&] { on_new = ask_ctype(); });
    first.join();
    fib::Fiber second([&] { on_recycled = ask_ctype(); });
    second.join();
    const CtypeAnswers expected{true, false, true, false, 'Q', 'z'};
    EXPECT_EQ(on_new, expected);
    EXPECT_EQ(on_recycled, expected);
    EXPECT_EQ(tls.stats().tls_blocks_created, 1u);
}

// A new thread starts with errno 0 and the global locale: so does a fiber on a recycled block,
// whose last fiber left an error and a locale of its own (libc's TLS is not reset on reuse in a
// dynamic build; fiber_starting sets them back).
TEST(L07_Libc, ARecycledBlockStartsWithErrnoZeroAndTheGlobalLocale) {
    const locale_t c_locale = newlocale(LC_ALL_MASK, "C", nullptr);
    ASSERT_NE(c_locale, nullptr);
    fib::FiberManager manager;
    fib::FiberTls tls(manager);
    int errno_seen = -1;
    locale_t locale_seen = nullptr;
    fib::Fiber first([&] {
        errno = EIO;
        uselocale(c_locale);
    });
    first.join();
    fib::Fiber second([&] {
        errno_seen = errno;
        locale_seen = uselocale(nullptr);
    });
    second.join();
    freelocale(c_locale);
    EXPECT_EQ(tls.stats().tls_blocks_created, 1u) << "the second fiber ran on the first's block";
    EXPECT_EQ(errno_seen, 0);
    EXPECT_EQ(locale_seen, LC_GLOBAL_LOCALE);
    EXPECT_EQ(uselocale(nullptr), LC_GLOBAL_LOCALE) << "main's locale";
}

// Returns the results of each step; pthread_mutex_* return error numbers.
std::vector<int> exercise_mutex(int type) {
    pthread_mutexattr_t attributes;
    pthread_mutexattr_init(&attributes);
    pthread_mutexattr_settype(&attributes, type);
    pthread_mutex_t mutex;
    pthread_mutex_init(&mutex, &attributes);
    pthread_mutexattr_destroy(&attributes);
    std::vector<int> results;
    results.push_back(pthread_mutex_lock(&mutex));
    results.push_back(pthread_mutex_lock(&mutex));
    results.push_back(pthread_mutex_trylock(&mutex));
    fib::this_fiber::yield();  // held across a switch
    results.push_back(pthread_mutex_unlock(&mutex));
    results.push_back(pthread_mutex_unlock(&mutex));
    results.push_back(pthread_mutex_unlock(&mutex));
    pthread_mutex_destroy(&mutex);
    return results;
}

// A pthread key's value on a TLS fiber. x86-64 reaches keys 0-31 through `self`: the thread's,
// shared by its fibers. AArch64 reaches them in the block's own struct pthread: per fiber, and
// null again in a recycled block (TlsBlockPool::give_back clears them).
TEST(L07_Libc, PthreadKeyValueOnATlsFiberIsTheThreadsOnX86AndTheFibersOnAarch64) {
    pthread_key_t key;
    ASSERT_EQ(pthread_key_create(&key, nullptr), 0);
    int main_value = 0, fiber_value = 0;
    ASSERT_EQ(pthread_setspecific(key, &main_value), 0);
    void* seen[2] = {};
    {
        fib::FiberManager manager;
        fib::FiberTls tls(manager);
        for (int i = 0; i < 2; ++i) {
            fib::Fiber fiber([&, i] {
                seen[i] = pthread_getspecific(key);
                pthread_setspecific(key, &fiber_value);
            });
            fiber.join();
        }
        EXPECT_EQ(tls.stats().tls_blocks_created, 1u);  // the second fiber reused the block
    }
    void* on_main = pthread_getspecific(key);
    pthread_key_delete(key);
#if defined(__aarch64__)
    EXPECT_EQ(seen[0], nullptr);
    EXPECT_EQ(seen[1], nullptr);
    EXPECT_EQ(on_main, &main_value);
#else
    EXPECT_EQ(seen[0], &main_value);
    EXPECT_EQ(seen[1], &fiber_value);
    EXPECT_EQ(on_main, &fiber_value);
#endif
}

TEST(L07_Libc, ErrorCheckingMutexKnowsItsOwnerInAFiber) {
    fib::FiberManager manager;
    fib::FiberTls tls(manager);
    std::vector<int> results;
    fib::Fiber fiber([&] { results = exercise_mutex(PTHREAD_MUTEX_ERRORCHECK); });
    fiber.join();
    // lock, lock again (deadlock detected), trylock (busy), unlock, then two
    // unlocks of a mutex this fiber no longer owns.
    EXPECT_EQ(results, (std::vector<int>{0, EDEADLK, EBUSY, 0, EPERM, EPERM}));
}

TEST(L07_Libc, RecursiveMutexCountsItsOwnersLocksInAFiber) {
    fib::FiberManager manager;
    fib::FiberTls tls(manager);
    std::vector<int> results;
    fib::Fiber fiber([&] { results = exercise_mutex(PTHREAD_MUTEX_RECURSIVE); });
    fiber.join();
    // Three locks (trylock succeeds for the owner), three unlocks.
    EXPECT_EQ(results, (std::vector<int>{0, 0, 0, 0, 0, 0}));
}

void yield_between() { fib::this_fiber::yield(); }
void nothing_between() {}

TEST(L07_Libc, StackProtectedFunctionReturnsNormallyInFibersAndAcrossAYield) {
    fib::FiberManager manager;
    fib::FiberTls tls(manager);
    std::array<int, 3> sums{};
    fib::Fiber straight([&] { sums[0] = l06_protected_sum(10, nothing_between); });
    fib::Fiber yielding([&] { sums[1] = l06_protected_sum(64, yield_between); });
    fib::Fiber other([&] { sums[2] = l06_protected_sum(20, yield_between); });
    straight.join();
    yielding.join();
    other.join();
    EXPECT_EQ(sums, (std::array<int, 3>{55, 2080, 210}));
    EXPECT_EQ(l06_protected_sum(5, nothing_between), 15);  // and on main
}

#if defined(__SANITIZE_ADDRESS__)
// ASan's idea of the running code's stack, read with a switch annotation from
// main's stack to itself: it returns the old bounds and sets the right ones.
bool asan_thinks_main_runs_on_its_own_stack() {
    pthread_attr_t attributes;
    void* bottom = nullptr;
    std::size_t size = 0;
    pthread_getattr_np(pthread_self(), &attributes);
    pthread_attr_getstack(&attributes, &bottom, &size);
    pthread_attr_destroy(&attributes);
    void* fake_stack = nullptr;
    const void* believed_bottom = nullptr;
    std::size_t believed_size = 0;
    __sanitizer_start_switch_fiber(&fake_stack, bottom, size);
    __sanitizer_finish_switch_fiber(fake_stack, &believed_bottom, &believed_size);
    const auto frame = reinterpret_cast<std::uintptr_t>(__builtin_frame_address(0));
    const auto low = reinterpret_cast<std::uintptr_t>(believed_bottom);
    return frame >= low && frame < low + believed_size;
}
#endif

// ASan keeps each thread's stack bounds in its own per-thread state, found
// through a pthread key, and the manager's annotated switches
// (fib/sanitizer.hpp) move them from stack to stack. A fiber's fresh block has
// no key values: ASan would not know the thread there, skip the fiber's half
// of each annotation, and leave main believing it runs on the last fiber's
// stack, so that every later throw on main warns "ASan is ignoring requested
// __asan_handle_no_return". make_block copies the thread's key values into
// each block (share_sanitizer_thread); main must come back with its own stack,
// as it does after plain fibers.
TEST(L07_Libc, AsanStillKnowsMainsStackAfterFibersWithTheirOwnTls) {
#if !defined(__SANITIZE_ADDRESS__)
    GTEST_SKIP() << "runs under AddressSanitizer: make SAN=1 test";
#else
    asan_thinks_main_runs_on_its_own_stack();  // whatever an earlier test left, set it right
    {
        fib::FiberManager manager;
        fib::Fiber plain([] { fib::this_fiber::yield(); });
        plain.join();
    }
    EXPECT_TRUE(asan_thinks_main_runs_on_its_own_stack()) << "after plain fibers";
    {
        fib::FiberManager manager;
        fib::FiberTls tls(manager);
        fib::Fiber with_tls([] { fib::this_fiber::yield(); });
        with_tls.join();
    }
    EXPECT_TRUE(asan_thinks_main_runs_on_its_own_stack()) << "after fibers with their own TLS";
    asan_thinks_main_runs_on_its_own_stack();
#endif
}

}  // namespace
