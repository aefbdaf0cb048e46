# fib_gdb.py — lesson 2: gdb commands that know the fibers: info fibers, fiber bt ID, fiber ID.
#
# src/02-fibers/registry.cpp embeds this script in every binary built with the
# course's library, so gdb runs it when it loads the binary or a core file of it
# (once the directory is trusted: lessons/02-fibers/APPENDIX.md). It starts from
# fib::FiberManager::registry_, the list of every live manager, and reads every
# field by name from the debug info, never at a hand-counted offset, so it
# reads any stage's FiberManager and FiberRecord.
#
#   info fibers          every fiber of every manager: id, name, state, what it
#                        waits for, its stack and how much of it was written
#   fiber bt [T.]ID      the backtrace of a fiber that is not running, unwound
#                        from the context it saved when it switched away
#   fiber [T.]ID         gdb's view of thread T (the manager's) continues into
#                        that fiber's frames, until `fiber off` or the program runs
#
# Fiber ids count per manager; T is gdb's thread number of the manager's thread,
# needed only when several managers have a fiber with that id.
#
# Every command reads the fibers in C++ (cplusplus(), below), whatever frame is
# selected: in a program that waits in a system call, frame 0 is libc's wrapper,
# a C function, where gdb would parse fib::FiberManager::registry_ as C and
# find nothing.
import contextlib

import gdb
import gdb.unwinder

STATES = {"Running": "running", "Ready": "ready", "Blocked": "parked", "Finished": "finished"}


class FiberError(gdb.GdbError):
    pass


@contextlib.contextmanager
def cplusplus():
    """Evaluate expressions and type names as C++ inside the block, then give back the
    user's `set language`, error or not. "auto" follows the selected frame's language,
    and a thread switch inside the block selects a frame, so auto is not kept: C++ is
    set by hand and "auto" set again afterwards, which takes the frame's language anew.
    to_string keeps gdb's "the current language does not match this frame" quiet."""
    setting = gdb.parameter("language")
    if setting == "c++":
        yield
        return
    gdb.execute("set language c++", to_string=True)
    try:
        yield
    finally:
        gdb.execute(f"set language {setting}", to_string=True)


def managers():
    """Every live FiberManager, as gdb.Values of type FiberManager*."""
    try:
        registry = gdb.parse_and_eval("fib::FiberManager::registry_")
    except gdb.error:
        raise FiberError("no fib::FiberManager::registry_ here: not a program of the course's "
                         "library, or built without debug info (-g)")
    found, manager = [], registry["head_"]
    while manager:
        found.append(manager)
        manager = manager["registry_link_"]["next"]
    if not found:
        raise FiberError("no FiberManager is alive (fib::FiberManager::registry_ is empty)")
    return found


def fibers_of(manager):
    """Every unreleased fiber record of a manager, main first."""
    found, fiber = [], manager["all_"]["head_"]
    while fiber:
        found.append(fiber)
        fiber = fiber["all_link"]["next"]
    return found


def thread_of(manager):
    """gdb's thread for the manager's thread (its LWP is the manager's gettid())."""
    lwp = int(manager["thread_id_"])
    for thread in gdb.selected_inferior().threads():
        if thread.ptid[1] == lwp:
            return thread
    return None


def label(fiber):
    """"fiber 3 (producer)", as the library's own messages name a fiber."""
    name = fiber["name"].string()
    return f"fiber {int(fiber['id'])}" + (f" ({name})" if name else "")


def trampoline():
    return int(gdb.parse_and_eval("(unsigned long) &context_trampoline"))


def aarch64():
    """Whether the program is AArch64's, whose Context (context.hpp) has other fields."""
    return gdb.selected_inferior().architecture().name().startswith("aarch64")


def resume_address(context):
    """Where a saved Context resumes: its rip, or on AArch64 its lr."""
    return int(context["lr" if aarch64() else "rip"])


def not_started(fiber):
    """A fiber queued but never run has a fresh context: it resumes at the trampoline."""
    return resume_address(fiber["context"]) == trampoline()


def state_of(fiber):
    state = str(fiber["state"]).split("::")[-1]
    return STATES.get(state, state.lower())


def waits_for(fiber):
    """What a parked fiber waits for, in the words of the deadlock report."""
    if str(fiber["state"]).endswith("Ready") and not_started(fiber):
        return "not started"
    if not str(fiber["state"]).endswith("Blocked"):
        last = fiber["last_wait"]
        return f"back from {last.string()}" if last else ""
    site = fiber["waiting_for"]
    text = site["what"].string() if site["what"] else "?"
    if site["fiber"]:
        text += ", waiting for " + label(site["fiber"])
    if site["object"]:
        text += f", on {int(site['object']):#x}"
    return text


def stack_of(fiber):
    bottom = int(fiber["stack"]["bottom_"])
    if not bottom:
        return "the thread's own"
    size = int(fiber["stack"]["size_"])
    used = high_water(bottom, size)
    return f"{bottom:#x}-{bottom + size:#x}, {used / 1024:.1f}/{size / 1024:.0f} KiB used"


# How much of a stack was written: the bytes from its deepest non-zero 8-byte word up to its
# top, the record and the callable at the top included. A fresh stack reads as zeros, so this
# is how deep the fiber wrote, short by whatever it wrote as zeros at its deepest point. A stack
# the pool handed out again still holds what its earlier fibers wrote, unless the pool erased
# it: then this is the deepest any of them went. It is read page by page from the bottom,
# through gdb, in a live process or a core file; a page gdb cannot read counts as zeros.
# (4 KiB at a time: a page, or a part of one where pages are bigger, as on some AArch64 machines.)
def high_water(bottom, size):
    inferior = gdb.selected_inferior()
    page = 4096
    for start in range(bottom, bottom + size, page):
        try:
            data = bytes(inferior.read_memory(start, min(page, bottom + size - start)))
        except gdb.MemoryError:
            continue
        written = data.lstrip(b"\0")
        if written:
            deepest = start + (len(data) - len(written)) // 8 * 8
            return bottom + size - deepest
    return 0


def find(spec):
    """(manager, fiber) for "ID" or "T.ID"."""
    thread_number, _, fiber_id = spec.strip().rpartition(".")
    try:
        wanted = int(fiber_id)
        thread_number = int(thread_number) if thread_number else None
    except ValueError:
        raise FiberError(f"fiber: expected ID or THREAD.ID (see `info fibers`), not '{spec}'")
    matches = []
    for manager in managers():
        thread = thread_of(manager)
        if thread_number is not None and (thread is None or thread.num != thread_number):
            continue
        matches += [(manager, f) for f in fibers_of(manager) if int(f["id"]) == wanted]
    if not matches:
        raise FiberError(f"no fiber {spec} (see `info fibers`)")
    if len(matches) > 1:
        raise FiberError(f"several managers have a fiber {wanted}: say THREAD.{wanted}, THREAD "
                         "being gdb's thread number in `info fibers`")
    return matches[0]


def saved_frame(manager, fiber):
    """The registers of the frame that called switch_context, from the fiber's saved
    Context: switch_context stored rsp right after its call pushed the return address,
    so the caller resumes at [rsp] with rsp + 8, and the callee-saved registers as saved.
    On AArch64 the return address is the saved lr, and sp is the caller's as it was."""
    if fiber == manager["running_"]:
        raise FiberError(f"{label(fiber)} is running: its registers are its thread's own "
                         "(`thread` to that thread, then `bt`)")
    if not_started(fiber):
        raise FiberError(f"{label(fiber)} has not started: it has no frames yet")
    context = fiber["context"]
    if aarch64():
        sp, lr = int(context["sp"]), int(context["lr"])
        registers = {f"x{n}": int(context[f"x{n}"]) for n in range(19, 29)}
        registers.update(x29=int(context["fp"]), x30=lr, pc=lr, sp=sp)
        return sp, registers
    rsp = int(context["rsp"])
    return_address = int(gdb.Value(rsp).cast(gdb.lookup_type("unsigned long").pointer()).dereference())
    registers = {name: int(context[name]) for name in ("rbx", "rbp", "r12", "r13", "r14", "r15")}
    registers.update(rip=return_address, rsp=rsp + 8)
    return rsp, registers


class FrameId:
    def __init__(self, sp, pc):
        self.sp = sp
        self.pc = pc


class FiberUnwinder(gdb.unwinder.Unwinder):
    """While a fiber is selected, frame 0 of its manager's thread unwinds into the
    fiber's saved frames. Frame 0 itself stays the thread's: gdb reads it from the CPU,
    and an unwinder can only say where the caller's registers are."""

    def __init__(self):
        super().__init__("fib fibers")
        self.selected = None  # (gdb thread number, saved rsp, registers), or None

    def __call__(self, pending_frame):
        if self.selected is None or pending_frame.level() != 0:
            return None
        thread_number, saved_rsp, registers = self.selected
        if gdb.selected_thread() is None or gdb.selected_thread().num != thread_number:
            return None
        # Frame 0's id says it lies just below the fiber's frames, as a callee's would,
        # so gdb does not take frame 1 for a corrupt stack going the wrong way.
        frame_id = FrameId(gdb.Value(saved_rsp), pending_frame.read_register("pc" if aarch64() else "rip"))
        info = pending_frame.create_unwind_info(frame_id)
        for name, value in registers.items():
            info.add_saved_register(name, gdb.Value(value).cast(pending_frame.read_register(name).type))
        return info


class HideThreadFrame:
    """While a fiber is selected, `bt` on its thread leaves out frame 0, the thread's
    own frame (`bt -no-filters` shows it)."""

    def __init__(self):
        self.name = "fib fibers"
        self.priority = 100
        self.enabled = True
        gdb.frame_filters[self.name] = self

    def filter(self, frames):
        if unwinder.selected is None or gdb.selected_thread().num != unwinder.selected[0]:
            return frames
        return (f for f in frames if f.inferior_frame().level() != 0)


def select(manager, fiber):
    thread = thread_of(manager)
    if thread is None:
        raise FiberError(f"no gdb thread has LWP {int(manager['thread_id_'])}, the thread of "
                         f"{label(fiber)}'s manager")
    saved_rsp, registers = saved_frame(manager, fiber)
    thread.switch()
    unwinder.selected = (thread.num, saved_rsp, registers)
    gdb.invalidate_cached_frames()
    return thread


def selected_level():
    """The level of the frame the user selected, or None without a stack."""
    try:
        return gdb.selected_frame().level()
    except gdb.error:
        return None


def select_level(level):
    """Select frame LEVEL of the selected thread through gdb's Python API: `frame N`
    would parse N as an expression of the user's language, and not every one has them."""
    if level is None:
        return
    frame = gdb.newest_frame()
    for _ in range(level):
        frame = frame.older() or frame  # a stack shorter than before ends at its last frame
    frame.select()


def deselect(_event=None):
    if unwinder.selected is not None:
        unwinder.selected = None
        gdb.invalidate_cached_frames()


class InfoFibers(gdb.Command):
    """List every fiber of every FiberManager: id, name, state, what it waits for, stack (and how
    much of it was written)."""

    def __init__(self):
        super().__init__("info fibers", gdb.COMMAND_STACK)

    def invoke(self, argument, from_tty):
        with cplusplus():
            self.list_fibers()

    def list_fibers(self):
        for manager in managers():
            thread = thread_of(manager)
            where = f"thread {thread.num}" if thread else "no gdb thread"
            fibers = fibers_of(manager)
            gdb.write(f"manager {int(manager):#x} on {where} (LWP {int(manager['thread_id_'])}), "
                      f"{len(fibers)} fibers:\n")
            width = max(len(fiber["name"].string()) for fiber in fibers)
            gdb.write(f"    {'id':>4}  {'name':<{width}}  {'state':<9} {'waits for':<40} stack\n")
            for fiber in fibers:
                mark = "*" if fiber == manager["running_"] else " "
                gdb.write(f"  {mark} {int(fiber['id']):>4}  {fiber['name'].string():<{width}}  "
                          f"{state_of(fiber):<9} {waits_for(fiber):<40} {stack_of(fiber)}\n")


class FiberCommand(gdb.Command):
    """Show a fiber's frames in the backtrace of its manager's thread.
fiber [THREAD.]ID   select it: `bt`, `frame N`, `info locals` then see its frames
fiber off           back to the thread's own frames (so does running the program)
fiber bt [THREAD.]ID   print its backtrace, without selecting it"""

    def __init__(self):
        super().__init__("fiber", gdb.COMMAND_STACK, prefix=True)

    def invoke(self, argument, from_tty):
        if not argument.strip():
            raise FiberError("fiber: say which: fiber ID, fiber bt ID, fiber off (see `info fibers`)")
        with cplusplus():
            manager, fiber = find(argument)
            thread = select(manager, fiber)
            name = label(fiber)
        # gdb's own output (here and in `fiber bt`) in the user's language, as `bt` prints it.
        gdb.write(f"[{name} on thread {thread.num}: frame 0 is still the thread's own; "
                  f"frames from 1 are the fiber's; `fiber off` to leave]\n")
        select_level(1)
        gdb.execute("frame")


class FiberOff(gdb.Command):
    """Back to the thread's own frames."""

    def __init__(self):
        super().__init__("fiber off", gdb.COMMAND_STACK)

    def invoke(self, argument, from_tty):
        deselect()
        select_level(0)
        gdb.execute("frame")


class FiberBacktrace(gdb.Command):
    """fiber bt [THREAD.]ID: the backtrace of a fiber that is not running."""

    def __init__(self):
        super().__init__("fiber bt", gdb.COMMAND_STACK)

    def invoke(self, argument, from_tty):
        # The user's thread and frame are selected again afterwards, and with them, under
        # `set language auto`, the language they had.
        thread, level, previous = gdb.selected_thread(), selected_level(), unwinder.selected
        try:
            with cplusplus():
                manager, fiber = find(argument)
                select(manager, fiber)
                waits = waits_for(fiber)
                heading = f"{label(fiber)}, {state_of(fiber)}{': ' + waits if waits else ''}:\n"
            gdb.write(heading)
            gdb.write(gdb.execute("bt", to_string=True))
        finally:
            unwinder.selected = previous
            thread.switch()
            gdb.invalidate_cached_frames()
            select_level(level)


unwinder = FiberUnwinder()
gdb.unwinder.register_unwinder(None, unwinder, replace=True)
HideThreadFrame()
gdb.events.cont.connect(deselect)
InfoFibers()
FiberCommand()
FiberOff()
FiberBacktrace()
