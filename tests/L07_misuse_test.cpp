// L07_misuse_test.cpp — lesson 7: every misuse of FiberTls and fib::fiber_local stops the program
// with a "fib: fatal:" message that says what went wrong: a FiberTls installed too late or from a
// fiber, destroyed while fibers exist, a fiber_local used where nobody gives fibers blocks or
// declared after the first block, and an exception escaping a detached fiber with TLS of its own.
#include <gtest/gtest.h>

#include <memory>
#include <stdexcept>
#include <thread>

#include "fib/fiber.hpp"
#include "fib/fiber_local.hpp"
#include "fib/fiber_tls.hpp"

namespace {

fib::fiber_local<int> requests{0};

// Each death test runs in a re-executed child (tests/main.cpp), so the child's main thread has
// never touched a fiber_local, and the layout of blocks is not fixed yet when the test starts.

void install_after_a_fiber_exists() {
    fib::FiberManager manager;
    fib::Fiber early([] {});
    fib::FiberTls tls(manager);
}

void install_from_a_fiber() {
    fib::FiberManager manager;
    fib::Fiber installer([&manager] { fib::FiberTls tls(manager); });
    installer.join();
}

void destroy_while_a_fiber_exists() {
    fib::FiberManager manager;
    auto tls = std::make_unique<fib::FiberTls>(manager);
    fib::Fiber pending([] {});
    tls.reset();
}

// The fiber has ended, but its record (and its blocks) live until it is joined.
void destroy_while_a_finished_fiber_is_unjoined() {
    fib::FiberManager manager;
    auto tls = std::make_unique<fib::FiberTls>(manager);
    fib::Fiber finished([] {});
    fib::this_fiber::yield();
    tls.reset();
}

void fiber_local_with_no_fiber_tls() {
    fib::FiberManager manager;
    fib::Fiber reader({.name = "reader"}, [] { ++*requests; });
    reader.join();
}

void fiber_local_in_main_with_no_fiber_tls() {
    fib::FiberManager manager;
    ++*requests;
}

void fiber_local_with_fiber_locals_off(bool thread_locals) {
    fib::FiberManager manager;
    fib::FiberTls tls(manager, {.thread_locals = thread_locals, .fiber_locals = false});
    fib::Fiber reader([] { ++*requests; });
    reader.join();
}

void declare_after_the_first_block() {
    fib::FiberManager manager;
    fib::FiberTls tls(manager);  // makes main's block: the layout is fixed
    fib::fiber_local<int> late{1};
    ++*late;
}

// No manager: the thread's own block, made at its first access, fixes the layout just the same.
void declare_after_a_thread_block() {
    ++*requests;
    fib::fiber_local<int> late{1};
}

void throw_from_a_detached_tls_fiber() {
    fib::FiberManager manager;
    fib::FiberTls tls(manager);
    fib::Fiber({.name = "leaky"}, [] { throw std::runtime_error("tls boom"); }).detach();
    manager.wait_for_all();
}

// Detached after it ended: the exception is reported from main, on main's TLS block.
void detach_a_finished_tls_fiber_that_threw() {
    fib::FiberManager manager;
    fib::FiberTls tls(manager);
    fib::Fiber thrower({.name = "late"}, [] { throw std::logic_error("found late"); });
    fib::this_fiber::yield();
    thrower.detach();
}

// A thread_local made before the thread's first fiber_local access is destroyed after the
// thread's fiber-local block: its destructor may not read a fiber_local.
struct ReadsAFiberLocalWhenDestroyed {
    ~ReadsAFiberLocalWhenDestroyed() { ++*requests; }
};

void fiber_local_read_as_the_thread_exits() {
    std::thread([] {
        thread_local ReadsAFiberLocalWhenDestroyed reader;
        (void)&reader;  // constructed now, so destroyed last
        ++*requests;    // makes the thread's block
    }).join();
}

// main reads a fiber_local before any FiberManager exists (the thread gets a
// block of its own), then runs fibers with no FiberTls: they must be refused,
// not quietly share the thread's block.
void thread_block_then_fibers_without_fiber_tls() {
    *requests = 1;
    fib::FiberManager manager;
    fib::Fiber reader({.name = "reader"}, [] { *requests = 2; });
    reader.join();
}

TEST(L07_MisuseDeathTest, InstallingFiberTlsAfterAFiberWasCreatedStops) {
    EXPECT_DEATH(install_after_a_fiber_exists(),
                 "fib: fatal: a fiber environment must be installed from main before any fiber "
                 "is created");
}

TEST(L07_MisuseDeathTest, InstallingFiberTlsFromAFiberStops) {
    EXPECT_DEATH(install_from_a_fiber(),
                 "fib: fatal: a fiber environment must be installed from main before any fiber");
}

TEST(L07_MisuseDeathTest, DestroyingFiberTlsWhileAFiberExistsStops) {
    EXPECT_DEATH(destroy_while_a_fiber_exists(),
                 "fib: fatal: the FiberTls was destroyed while fibers still exist; destroy it "
                 "after they end");
}

TEST(L07_MisuseDeathTest, DestroyingFiberTlsWhileAFinishedFiberIsUnjoinedStops) {
    EXPECT_DEATH(destroy_while_a_finished_fiber_is_unjoined(),
                 "fib: fatal: the FiberTls was destroyed while fibers still exist");
}

TEST(L07_MisuseDeathTest, FiberLocalInAFiberWithNoFiberTlsStopsNamingTheFiber) {
    EXPECT_DEATH(fiber_local_with_no_fiber_tls(),
                 "fib: fatal: fiber 1 \\(reader\\) used a fib::fiber_local, but its FiberManager "
                 "has no FiberTls with fiber_locals");
}

TEST(L07_MisuseDeathTest, FiberLocalInMainWithNoFiberTlsStopsNamingMain) {
    EXPECT_DEATH(fiber_local_in_main_with_no_fiber_tls(),
                 "fib: fatal: fiber 0 \\(main\\) used a fib::fiber_local, but its FiberManager "
                 "has no FiberTls");
}

TEST(L07_MisuseDeathTest, FiberLocalWithFiberLocalsOffStops) {
    EXPECT_DEATH(fiber_local_with_fiber_locals_off(true),
                 "fib: fatal: fiber 1 used a fib::fiber_local, but its FiberManager has no "
                 "FiberTls with fiber_locals");
}

TEST(L07_MisuseDeathTest, FiberLocalInAFiberAfterTheThreadHadItsOwnBlockStops) {
    EXPECT_DEATH(thread_block_then_fibers_without_fiber_tls(),
                 "fib: fatal: fiber 1 \\(reader\\) used a fib::fiber_local, but its FiberManager "
                 "has no FiberTls with fiber_locals");
}

TEST(L07_MisuseDeathTest, FiberLocalWithBothOptionsOffStops) {
    EXPECT_DEATH(fiber_local_with_fiber_locals_off(false),
                 "fib: fatal: fiber 1 used a fib::fiber_local, but its FiberManager has no "
                 "FiberTls with fiber_locals");
}

TEST(L07_MisuseDeathTest, DeclaringAFiberLocalAfterTheFirstBlockStops) {
    EXPECT_DEATH(declare_after_the_first_block(),
                 "fib: fatal: a fib::fiber_local was declared after the first fiber-local block "
                 "was made; declare fiber_locals at namespace scope");
}

TEST(L07_MisuseDeathTest, DeclaringAFiberLocalAfterAThreadsOwnBlockStops) {
    EXPECT_DEATH(declare_after_a_thread_block(),
                 "fib: fatal: a fib::fiber_local was declared after the first fiber-local block");
}

TEST(L07_MisuseDeathTest, ExceptionEscapingADetachedTlsFiberNamesIt) {
    EXPECT_DEATH(throw_from_a_detached_tls_fiber(),
                 "fib: fatal: an exception of type std::runtime_error escaped detached fiber 1 "
                 "\\(leaky\\): tls boom");
}

TEST(L07_MisuseDeathTest, DetachingAFinishedTlsFiberThatThrewNamesIt) {
    EXPECT_DEATH(detach_a_finished_tls_fiber_that_threw(),
                 "fib: fatal: an exception of type std::logic_error escaped detached fiber 1 "
                 "\\(late\\): found late");
}

TEST(L07_MisuseDeathTest, FiberLocalReadFromAThreadLocalDestructorAfterTheBlockWentStops) {
    EXPECT_DEATH(fiber_local_read_as_the_thread_exits(),
                 "fib: fatal: a fib::fiber_local was used as thread [0-9]+ exits, after its "
                 "fiber-local block was destroyed");
}

}  // namespace
