# docs_glossary.py — the glossary on the index of the course's pages (make docs): each
# term the course uses, a short definition, and where the course defines it: a symbol on
# a lesson's annotated page (`Name`) or a heading of a lesson's README (# Heading).
import html

from docs_markdown import slug

TERMS = [
    ("context", "The registers a paused computation needs again (callee-saved ones, rsp, rip, "
     "MXCSR, x87 control word), saved so that another can run on the same thread.", 1, "`Context`"),
    ("callee-saved register", "A register the System V ABI says a function must leave as it found it "
     "(rbx, rbp, r12-r15, rsp): the only ones a switch must save.", 1, "# The idea"),
    ("context switch", "Saving one context and loading another, rsp included, which moves the CPU onto "
     "the other computation's stack.", 1, "`switch_context`"),
    ("trampoline", "The first frame of a fresh context: calls the entry function and is the outermost "
     "frame unwinders see.", 1, "`context_trampoline`"),
    ("guard page / guard region", "No-access memory below a stack, so that an overflow faults at once "
     "instead of writing into a neighbour.", 1, "`Stack`"),
    ("System V ABI", "The calling convention of Linux on x86-64: which registers carry arguments, "
     "which a call may destroy and which it must keep, and how the stack is aligned at a call.", 1,
     "# The idea"),
    ("CFI (call frame information)", "The table beside the code from which an unwinder (gdb's bt, a "
     "C++ exception) finds each frame's caller; an assembly routine writes it with .cfi_ directives.",
     1, "# Details worth knowing"),
    ("futex", "The kernel's queue of threads asleep on one memory word, which blocking locks and "
     "condition variables sleep in; a thread's wake through it takes microseconds.", 1, "# Measured"),
    ("fiber", "A function running on a stack of its own that gives up the CPU only where it chooses "
     "(yield, a wait); the manager decides who runs next.", 2, "`Fiber`"),
    ("ready queue", "The FIFO of fibers that can run; yield puts the running fiber at its back.", 2,
     "# The idea"),
    ("park / wake", "park blocks the running fiber until someone wakes it; wake puts a parked fiber "
     "back on the ready queue. Every wait in the course is built on the pair.", 2, "`FiberManager`"),
    ("intrusive list", "A list whose links live inside the elements, so queuing a fiber allocates "
     "nothing.", 2, "`IntrusiveList`"),
    ("condition variable (CondVar)", "A list of parked fibers that another fiber wakes when what they "
     "wait for may have changed.", 3, "`CondVar`"),
    ("lost wake-up", "A notify that comes between a waiter's check and its sleep, so the waiter sleeps "
     "on; threads need a mutex against it, fibers on one thread cannot meet it.", 3, "# The idea"),
    ("Waiter", "The fiber per thread that asks the kernel which fds are ready and wakes the fibers "
     "waiting on them: the reactor.", 4, "`Waiter`"),
    ("Poller", "The kernel interface behind the Waiter: poll(2) in lesson 4, epoll in lesson 5.", 4,
     "`Poller`"),
    ("thundering herd", "Every waiter woken for one event that only one of them can take, such as a "
     "connection to accept.", 4, "# The idea"),
    ("self-pipe", "A pipe a signal handler writes to, so that a program waiting on fds learns of the "
     "signal as one more readable fd.", 4, "# The idea"),
    ("level- vs edge-triggered", "Level-triggered: the kernel reports an fd as long as it is ready; "
     "edge-triggered: only when it becomes ready. The course's epoll backend is level-triggered.", 5,
     "# The idea"),
    ("timer heap", "A binary min-heap of every deadline of a thread; the Waiter sleeps until the "
     "nearest one, so no tick is needed.", 6, "`TimerHeap`"),
    ("async-signal-safe", "Safe to call from a signal handler, which may interrupt any code: write(2) "
     "is, malloc and any lock are not.", 6, "# The idea"),
    ("cancellation", "A request kept on the fiber that makes its current or next wait return "
     "ECANCELED; a CancelScope undoes what the wait registered.", 6, "`CancelScope`"),
    ("eventfd Event", "A flag a fiber waits on that any thread can set; across threads it goes "
     "through an eventfd the Waiter watches.", 6, "`Event`"),
    ("thread-local storage (TLS), thread pointer", "One copy of each thread_local variable per thread, "
     "in the thread's TLS block, found through the thread pointer: the %fs base register. errno is "
     "libc's; fibers of one thread share it unless the switch changes something.", 7, "# Why errno and thread_local leak across a park"),
    ("fiber-local storage", "A variable with one copy per fiber, found through %gs (or, for "
     "thread_local itself, a TLS block per fiber on %fs).", 7, "`fiber_local`"),
    ("FSGSBASE", "A CPU feature (usable from user space since Linux 5.9) that lets a program load the "
     "%fs and %gs bases with one instruction, wrfsbase/wrgsbase; without it, arch_prctl(2), a "
     "system call.", 7, "`fsgsbase_usable`"),
    ("PT_TLS segment (.tdata, .tbss)", "The ELF program header of a module's TLS image: .tdata holds "
     "the initial values a new block copies, .tbss the rest, zeroed.", 7, "`tls_segments`"),
    ("TCB", "Thread control block: the start of glibc's struct pthread, at the thread pointer (%fs), "
     "with the stack guard, the pointer guard and the DTV pointer.", 7, "`TcbHead`"),
    ("DTV", "Dynamic thread vector: per thread, the address of each module's TLS block, for "
     "thread_locals of shared libraries.", 7, "`DtvEntry`"),
    ("GOT", "Global offset table: addresses and offsets the dynamic linker fills in at load time; "
     "code reaches libc's errno at a TLS offset read from it.", 7, "# Part two (optional): a TLS block per fiber"),
    ("canary, pointer guard", "Random values in the TCB: the stack protector's canary, stored on a "
     "protected function's entry and checked on return, and glibc's key for the function "
     "pointers it stores (atexit handlers, jmp_bufs).", 7, "# Part two (optional): a TLS block per fiber"),
    ("rseq", "Restartable sequences: a per-thread area where the kernel writes the thread's current "
     "CPU number, which sched_getcpu() reads.", 7, "# Part two (optional): a TLS block per fiber"),
    ("SIGSETXID", "The signal glibc sends every thread when one calls setuid() and its kin, so that "
     "each thread changes its own ids.", 7, "# Part two (optional): a TLS block per fiber"),
    ("robust mutex", "A mutex the kernel releases when its owner thread dies, kept on a per-thread "
     "list; refused on a fiber with a TLS block of its own.", 7, "`refuse_robust_mutexes`"),
    ("offload", "Run blocking work on a pool thread while the fiber that asked waits, then resume it "
     "on its own thread.", 8, "`ThreadPool`"),
    ("cluster / shard", "One fiber manager per thread (a shard); fibers never migrate, threads talk "
     "through posted functions and Mailboxes.", 9, "`Cluster`"),
    ("Mailbox", "A bounded channel between threads of a cluster, on lesson 3's Channel's model.", 9,
     "`Mailbox`"),
    ("SO_REUSEPORT", "A socket option that lets several sockets listen on one port; the kernel hands "
     "each new connection to one of them by a hash of its addresses and ports.", 9, "# The idea"),
    ("executor / reactor / waker", "The parts of an async runtime: a queue of tasks that can run, what "
     "waits on the kernel, and the handle that puts a task back on the queue.", 10, "# The idea"),
    ("Task, symmetric transfer", "A lazy C++20 coroutine; when it ends, it resumes its awaiter by "
     "returning its handle, so long chains use no stack.", 10, "`Task`"),
    ("HALO", "Heap allocation elision: the compiler puts a coroutine's frame in its caller's frame "
     "when it can prove the coroutine ends first; the course's tasks do not count on it.", 10,
     "# Left out"),
]


def target(site, lesson, where):
    if where.startswith("`"):
        return site.lesson(lesson).page + "#" + site.lesson(lesson).symbols[where.strip("`")]
    return site.lesson(lesson).page + "#" + slug(where[2:])


def glossary_html(site):
    rows = "".join('<dt id="term-%s">%s</dt><dd>%s <a href="%s">Lesson %d</a></dd>'
                   % (slug(term), html.escape(term), html.escape(text), target(site, lesson, where), lesson)
                   for term, text, lesson, where in TERMS)
    return '<dl class="glossary">%s</dl>' % rows
