// stall_detector.cpp — lesson 12: the CPU-time timer, the signal handler and the stall report.
//
//   manager's thread                       kernel
//   StallDetector: timer_create(thread CPU clock, signal to this thread)
//   fiber spins ...                        every threshold/4 of CPU: signal
//   on_signal -> tick(): switch count the same as last tick? add a quarter;
//                a whole threshold: report once (write(2), backtrace)
//   a switch happens: the next tick sees a new count, forgets the stall
//
// What a signal handler may do. It runs on top of whatever the thread was
// doing, which may be halfway through malloc (holding its lock, its lists
// half linked), through stdio (holding stderr's lock) or through any other
// function. So the handler calls only async-signal-safe functions (signal-
// safety(7): write, timer_getoverrun, ...), never malloc, new, printf or a
// mutex: any of them can deadlock on a lock the interrupted code holds, or
// see a structure mid-update. It formats into a buffer on its own stack (the
// fiber's), reads plain fields that the interrupted thread itself wrote, and
// keeps errno as it found it: write(2) may change errno, and the interrupted
// code may be between a failing call and its read of errno. Two calls step
// outside the list, knowingly, as Seastar's report does: glibc's backtrace()
// and backtrace_symbols_fd(). Their first use loads libgcc_s (dlopen: malloc,
// locks), so the detector calls backtrace() once when it installs the handler;
// after that they read the unwind tables and write(2), and the one lock they
// take (the loader's, in dl_iterate_phdr and dladdr) is recursive.
//
// The handler runs on the stack of the fiber it interrupted: a few hundred
// bytes of its own and the unwinder's frames, well within the default 64 KiB.
// Under ThreadSanitizer (make TSAN=1) the signal is held back until the
// thread's next intercepted libc call or atomic operation, and the handler runs
// from inside TSan's runtime: a loop of bare arithmetic is reported only once it
// makes such a call, and its backtrace starts in the runtime, the spin further down.
//
// Which signal. SIGALRM, SIGVTALRM and SIGPROF belong to alarm(), setitimer()
// and profilers (the test runner's watchdog is SIGALRM); SIGUSR1/2 belong to the
// program. glibc keeps the first real-time signals, 32 and 33, for thread
// cancellation and setxid (SIGRTMIN already starts after them), and the
// sanitizers take only the fault signals (SIGSEGV, SIGBUS, SIGFPE, SIGILL). A
// real-time signal a few above SIGRTMIN, away from the ends that libraries
// reach for first, is nobody's.
#include "fib/stall_detector.hpp"

#include <execinfo.h>
#include <signal.h>
#include <ucontext.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <mutex>

#include "fib/fatal.hpp"

namespace fib {
namespace {

int stall_signal() { return SIGRTMIN + 5; }

// A timer's signal carries its detector's slot and generation, not its address:
// a signal can arrive after its timer is deleted (the kernel keeps one already
// queued; ThreadSanitizer holds signals back until the thread's next libc
// call), and then finds the generation changed and is dropped.
constexpr std::size_t kSlots = 256;
struct Slot {
    std::atomic<std::uint64_t> generation{0};  // 0: free
    StallDetector* detector = nullptr;
};
Slot slots[kSlots];
std::uint64_t next_generation = 1;
std::atomic<std::uint64_t> total_reports{0};

// Guards the slots' assignment, the count of live detectors and the handler's
// installation. Never taken in the handler.
std::mutex detectors_mutex;
std::size_t live_detectors = 0;
struct sigaction previous_action;

std::uintptr_t signal_value(std::size_t slot, std::uint64_t generation) {
    return static_cast<std::uintptr_t>(generation << 8 | slot);
}

// The message, assembled by hand on the handler's stack (no snprintf).
struct Line {
    char text[256];
    std::size_t length = 0;

    void add(const char* s, std::size_t limit = sizeof text) {
        for (std::size_t i = 0; s[i] && i < limit && length < sizeof text - 1; ++i) text[length++] = s[i];
    }
    void add_number(std::uint64_t value) {
        char digits[24];
        int count = 0;
        do {
            digits[count++] = static_cast<char>('0' + value % 10);
            value /= 10;
        } while (value != 0);
        while (count > 0 && length < sizeof text - 1) text[length++] = digits[--count];
    }
    // What fib::label() prints, "fiber 3 (spinner)", without its snprintf.
    void add_label(const FiberRecord& fiber) {
        add("fiber ");
        add_number(fiber.id);
        if (fiber.name[0] == '\0') return;
        add(" (");
        add(fiber.name, sizeof fiber.name);
        add(")");
    }
};

}  // namespace

StallDetector::StallDetector(FiberManager& manager, std::chrono::milliseconds threshold)
    : StallDetector(manager, threshold, false) {}

StallDetector::StallDetector(FiberManager& manager, std::chrono::milliseconds threshold,
                             bool from_environment)
    : manager_(manager), thread_id_(gettid()), from_environment_(from_environment) {
    if (manager.thread_id() != thread_id_)
        fatal("a StallDetector was made on another thread than its FiberManager's; make it on the "
              "manager's thread, whose CPU time it watches");
    if (threshold.count() <= 0) fatal("a StallDetector's threshold must be at least 1 ms");
    threshold_us_ = static_cast<std::uint64_t>(threshold.count()) * 1000;
    tick_us_ = threshold_us_ / 4;
    seen_running_ = manager.running();
    seen_switches_ = manager.stats().switches;
    std::lock_guard lock(detectors_mutex);
    for (Slot& slot : slots) {
        StallDetector* other = slot.detector;
        if (!other || other->thread_id_ != thread_id_) continue;
        if (!from_environment && !other->from_environment_)
            fatal("a second StallDetector was made on a thread that has one; one at a time");
        if (!from_environment) other->standing_aside_.store(true, std::memory_order_relaxed);
    }
    for (slot_ = 0; slot_ < kSlots && slots[slot_].detector; ++slot_) {
    }
    if (slot_ == kSlots) fatal("more than %zu StallDetectors at once", kSlots);
    generation_ = next_generation++;
    slots[slot_].detector = this;
    slots[slot_].generation.store(generation_, std::memory_order_release);
    if (live_detectors++ == 0) install_handler();
    // The timer counts this thread's CPU time and signals this thread
    // (SIGEV_THREAD_ID; glibc 2.36 names its field only _sigev_un._tid).
    sigevent event{};
    event.sigev_notify = SIGEV_THREAD_ID;
    event.sigev_signo = stall_signal();
    event.sigev_value.sival_ptr = reinterpret_cast<void*>(signal_value(slot_, generation_));
    event._sigev_un._tid = thread_id_;
    if (timer_create(CLOCK_THREAD_CPUTIME_ID, &event, &timer_) != 0)
        fatal("timer_create for a StallDetector failed: errno %d", errno);
    const timespec tick{static_cast<time_t>(tick_us_ / 1000000), static_cast<long>(tick_us_ % 1000000 * 1000)};
    const itimerspec every_tick{tick, tick};
    if (timer_settime(timer_, 0, &every_tick, nullptr) != 0)
        fatal("timer_settime for a StallDetector failed: errno %d", errno);
}

// First the slot is freed, so that no signal, late or not, reaches this
// detector any more; then the timer goes, and a signal already queued for this
// thread is taken off the queue while blocked (sigtimedwait with a zero
// timeout), before the last detector gives the signal back its old action.
StallDetector::~StallDetector() {
    if (gettid() != thread_id_) fatal("a StallDetector was destroyed on another thread than its own");
    std::unique_lock lock(detectors_mutex);
    slots[slot_].generation.store(0, std::memory_order_release);
    slots[slot_].detector = nullptr;
    lock.unlock();
    sigset_t just_ours, previous_mask;
    sigemptyset(&just_ours);
    sigaddset(&just_ours, stall_signal());
    pthread_sigmask(SIG_BLOCK, &just_ours, &previous_mask);
    timer_delete(timer_);
    const timespec no_wait{};
    while (sigtimedwait(&just_ours, nullptr, &no_wait) > 0) {
    }
    pthread_sigmask(SIG_SETMASK, &previous_mask, nullptr);
    lock.lock();
    if (--live_detectors == 0) sigaction(stall_signal(), &previous_action, nullptr);
    if (from_environment_) return;
    for (Slot& slot : slots) {
        StallDetector* other = slot.detector;
        if (other && other->thread_id_ == thread_id_) other->step_back_in();
    }
}

// Called with the handler locked out of the state by standing_aside_: the
// state is made fresh, then a signal fence keeps the compiler from moving the
// flag's store above it (the handler runs on this very thread, so the fence,
// not a CPU barrier, is what ordering needs).
void StallDetector::step_back_in() {
    seen_running_ = nullptr;
    reported_ = false;
    quiet_us_ = 0;
    std::atomic_signal_fence(std::memory_order_release);
    standing_aside_.store(false, std::memory_order_relaxed);
}

void StallDetector::install_handler() {
    void* warm_up[1];
    backtrace(warm_up, 1);  // loads libgcc_s now, not in the handler
    struct sigaction action {};
    action.sa_sigaction = on_signal;
    action.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&action.sa_mask);
    sigaction(stall_signal(), &action, &previous_action);
}

std::uint64_t StallDetector::reports() const { return reports_.load(std::memory_order_relaxed); }

std::uint64_t stall_reports() { return total_reports.load(std::memory_order_relaxed); }

std::size_t live_stall_detectors() {
    std::lock_guard lock(detectors_mutex);
    return live_detectors;
}

void StallDetector::on_signal(int, siginfo_t* info, void* ucontext) {
    if (info->si_code != SI_TIMER) return;
    const auto value = reinterpret_cast<std::uintptr_t>(info->si_value.sival_ptr);
    Slot& slot = slots[value % kSlots];
    if (slot.generation.load(std::memory_order_acquire) != value >> 8) return;  // a late one
    const int saved_errno = errno;
    const auto* context = static_cast<const ucontext_t*>(ucontext);
#if defined(__aarch64__)
    const auto interrupted_at = context->uc_mcontext.pc;
#else
    const auto interrupted_at = context->uc_mcontext.gregs[REG_RIP];
#endif
    slot.detector->tick(reinterpret_cast<const void*>(interrupted_at));
    errno = saved_errno;
}

// The manager's running fiber and switch count are plain fields written by
// this thread, which the handler interrupted between two instructions: the
// stores the thread made before are in memory, since switch_to() makes them
// before it calls switch_context(), which the compiler cannot see into. A tick
// that lands inside switch_to() itself may see the new running fiber with the
// old count, or the reverse; comparing both, it counts that as a switch, as it
// is. stats() copies seven such fields; there is no cheaper public read of
// the count, and seven loads are nothing next to a signal's delivery.
void StallDetector::tick(const void* interrupted_at) {
    if (standing_aside_.load(std::memory_order_relaxed)) return;
    std::atomic_signal_fence(std::memory_order_acquire);
    const FiberRecord* running = manager_.running();
    const std::uint64_t switches = manager_.stats().switches;
    if (running != seen_running_ || switches != seen_switches_) {
        seen_running_ = running;
        seen_switches_ = switches;
        quiet_us_ = 0;
        reported_ = false;
        return;
    }
    // A CPU-time timer fires on the scheduler's tick: a short period may have
    // expired more than once since the last signal (the overrun).
    const int overrun = timer_getoverrun(timer_);
    quiet_us_ += tick_us_ * (1 + static_cast<std::uint64_t>(overrun > 0 ? overrun : 0));
    if (reported_ || quiet_us_ < threshold_us_) return;
    reported_ = true;
    reports_.fetch_add(1, std::memory_order_relaxed);
    total_reports.fetch_add(1, std::memory_order_relaxed);
    report(*running, interrupted_at);
}

// The header line, then the backtrace from the interrupted instruction down:
// the frames above it are this handler's and the kernel's signal trampoline.
void StallDetector::report(const FiberRecord& fiber, const void* interrupted_at) {
    Line line;
    line.add("fib: stall: ");
    line.add_label(fiber);
    line.add(" has run for ");
    line.add_number(quiet_us_ / 1000);
    line.add(" ms of CPU time without a switch (");
    if (fiber.last_wait) {
        line.add("its last wait: ");
        line.add(fiber.last_wait);
    } else {
        line.add("it has not waited since its start");
    }
    line.add(")\n");
    [[maybe_unused]] ssize_t written = write(STDERR_FILENO, line.text, line.length);
    void* frames[48];
    const int count = backtrace(frames, 48);
    int first = 0;
    while (first < count && frames[first] != interrupted_at) ++first;
    if (first == count) first = 0;  // not found: print every frame
    backtrace_symbols_fd(frames + first, count - first, STDERR_FILENO);
}

void StallDetector::manager_created(FiberManager& manager) {
    const char* setting = std::getenv("FIB_STALL_MS");
    if (!setting || !*setting) return;
    char* end = nullptr;
    const long milliseconds = std::strtol(setting, &end, 10);
    if (*end != '\0' || milliseconds <= 0)
        fatal("FIB_STALL_MS=%s: give a stall threshold in milliseconds, at least 1", setting);
    new StallDetector(manager, std::chrono::milliseconds(milliseconds), true);
}

void StallDetector::manager_ending(FiberManager& manager) {
    StallDetector* from_environment = nullptr;
    {
        std::lock_guard lock(detectors_mutex);
        for (Slot& slot : slots) {
            StallDetector* detector = slot.detector;
            if (!detector || &detector->manager_ != &manager) continue;
            if (!detector->from_environment_)
                fatal("the FiberManager was destroyed while a StallDetector still watches it; "
                      "destroy the detector first");
            from_environment = detector;
        }
    }
    delete from_environment;
}

}  // namespace fib
