// L01_thread_pingpong.hpp — make bench, lesson 1: two OS threads handing a token back and forth through a futex.
//
//   bench::ThreadPingpong threads;          // starts the partner thread, asleep
//   threads.round_trips(1000);              // the token goes there and back 1,000 times
//
// Lesson 1's thread_pingpong times it one way (half a round trip); a later
// row that hands work to another thread and back is set beside a whole round
// trip, timed turn about with it (bench.hpp's ns_per_op_turn_about).
//
// The token is 1 while the partner has the turn, 0 while main has it, and -1
// ends the partner. A side that must wait sleeps in the kernel (FUTEX_WAIT);
// the other side's FUTEX_WAKE makes it runnable: one hand-off through the
// scheduler, as between any two threads that block.
#pragma once

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <thread>

namespace bench {

class ThreadPingpong {
public:
    ThreadPingpong()
        : partner_([this] {
              for (;;) {
                  while (token_.load() == 0) futex(FUTEX_WAIT_PRIVATE, 0);
                  if (token_.load() < 0) return;
                  token_.store(0);
                  futex(FUTEX_WAKE_PRIVATE, 1);
              }
          }) {}
    ~ThreadPingpong() {
        token_.store(-1);
        futex(FUTEX_WAKE_PRIVATE, 1);
        partner_.join();
    }
    ThreadPingpong(const ThreadPingpong&) = delete;
    ThreadPingpong& operator=(const ThreadPingpong&) = delete;

    // From the thread that made it: `count` hand-offs there and back.
    void round_trips(long count) {
        for (long i = 0; i < count; ++i) {
            token_.store(1);
            futex(FUTEX_WAKE_PRIVATE, 1);
            while (token_.load() == 1) futex(FUTEX_WAIT_PRIVATE, 1);
        }
    }

private:
    long futex(int operation, int value) {
        return ::syscall(SYS_futex, reinterpret_cast<int*>(&token_), operation, value, nullptr, nullptr, 0);
    }

    std::atomic<int> token_{0};
    std::thread partner_;  // last: it starts once token_ exists
};

}  // namespace bench
