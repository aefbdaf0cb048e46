// L07_robust_test.cpp — lesson 7: a robust mutex locked on a fiber with its own TLS block stops the
// program with a message naming the fiber (robust_list.hpp), instead of corrupting the thread's
// robust list; on main, and on fibers that share the thread's block, robust mutexes still work.
#include <gtest/gtest.h>
#include <pthread.h>

#include <cerrno>

#include "fib/fiber.hpp"
#include "fib/fiber_tls.hpp"

namespace {

struct RobustMutex {
    pthread_mutex_t mutex;
    RobustMutex() {
        pthread_mutexattr_t attributes;
        pthread_mutexattr_init(&attributes);
        pthread_mutexattr_setrobust(&attributes, PTHREAD_MUTEX_ROBUST);
        pthread_mutex_init(&mutex, &attributes);
        pthread_mutexattr_destroy(&attributes);
    }
    ~RobustMutex() { pthread_mutex_destroy(&mutex); }
};

// Lock, unlock, lock again: with the two halves of the list apart, the second lock is where the
// list would be corrupted.
int lock_unlock_twice(RobustMutex& robust) {
    for (int i = 0; i < 2; ++i) {
        if (int error = pthread_mutex_lock(&robust.mutex)) return error;
        if (int error = pthread_mutex_unlock(&robust.mutex)) return error;
    }
    return 0;
}

void robust_lock_on_a_tls_fiber() {
    fib::FiberManager manager;
    fib::FiberTls tls(manager);
    RobustMutex robust;
    fib::Fiber locker({.name = "locker"}, [&robust] { lock_unlock_twice(robust); });
    locker.join();
}

TEST(L07_RobustDeathTest, RobustMutexOnAFiberWithItsOwnBlockStopsNamingTheFiber) {
    EXPECT_DEATH(robust_lock_on_a_tls_fiber(),
                 "fib: fatal: fiber 1 \\(locker\\) locked a robust mutex, which a fiber with a TLS "
                 "block of its own cannot");
}

TEST(L07_Robust, MainAndFibersOnTheThreadsBlockStillLockRobustMutexes) {
    fib::FiberManager manager;
    fib::FiberTls tls(manager, {.thread_locals = false, .fiber_locals = true});
    RobustMutex robust;
    EXPECT_EQ(lock_unlock_twice(robust), 0);
    int on_fiber = -1;
    fib::Fiber locker([&] { on_fiber = lock_unlock_twice(robust); });
    locker.join();
    EXPECT_EQ(on_fiber, 0);
    EXPECT_EQ(lock_unlock_twice(robust), 0);
}

TEST(L07_Robust, MainStillLocksRobustMutexesBesideFibersWithBlocks) {
    fib::FiberManager manager;
    fib::FiberTls tls(manager);
    fib::Fiber other([] { fib::this_fiber::yield(); });
    RobustMutex robust;
    EXPECT_EQ(lock_unlock_twice(robust), 0);
    other.join();
    EXPECT_EQ(lock_unlock_twice(robust), 0);
}

}  // namespace
