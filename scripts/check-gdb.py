#!/usr/bin/env python3
# check-gdb.py — lesson 2: gdb's fiber commands (scripts/fib_gdb.py) on a live demo and on its core file.
#
#   check-gdb.py [DEMO]   (default: build/lesson2/demo; make check-gdb)
#
# Stops lesson 2's demo where the consumer fiber starts: main is parked in join,
# waiting for the producer, which yielded inside produce(). `info fibers` must list
# the three with their states and main's wait site; `fiber bt` of the producer and
# of main must run from switch_to down to context_trampoline and main(); `fiber 1`
# then `bt` must show the producer's frames, `fiber off` the consumer's again. Then
# SIGABRT makes the kernel write a core file (in a scratch directory, as the
# relative core_pattern "core" says), and the same checks run on it: gdb's own
# gcore would not do, it writes the fiber stacks as zeros (lessons/02-fibers/APPENDIX.md).
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile

COMMANDS = [
    ("info fibers", "info fibers"),
    ("fiber bt 1", "fiber bt 1"),
    ("fiber bt 0", "fiber bt 0"),
    ("fiber bt 2", "fiber bt 2"),
    ("fiber bt 9", "fiber bt 9"),
    ("fiber 1, bt", "fiber 1\nbt"),
    ("fiber off, bt", "fiber off\nbt"),
]
MARK = "@@check-gdb@@ "


def gdb_commands(live):
    """gdb's -ex arguments: each runs even when the one before fails (a file of commands
    would stop at its first error)."""
    lines = ["set pagination off", "set width 0", "set confirm off"]
    if live:
        lines += ["break consume", "run"]
    for name, commands in COMMANDS:
        lines.append(f"echo {MARK}{name}\\n")
        lines += commands.split("\n")
    if live:
        lines += [f"echo {MARK}abort\\n", "signal SIGABRT"]
    return [argument for line in lines for argument in ("-ex", line)]


def run_gdb(arguments, commands, cwd):
    """gdb's output, cut into sections at each MARK line; and the whole of it."""
    result = subprocess.run(["gdb", "-q", "-batch", "-nx", "-iex",
                             f"add-auto-load-safe-path {os.path.dirname(arguments[0])}"]
                            + commands + arguments, cwd=cwd, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, timeout=120,
                            preexec_fn=allow_core_files)
    sections, name = {"start": []}, "start"
    for line in result.stdout.splitlines():
        if line.startswith(MARK):
            name = line[len(MARK):]
            sections[name] = []
        else:
            sections[name].append(line)
    return {key: "\n".join(value) for key, value in sections.items()}, result.stdout


def allow_core_files():
    _, hard = resource.getrlimit(resource.RLIMIT_CORE)
    resource.setrlimit(resource.RLIMIT_CORE, (hard, hard))


def frames(text):
    return [line for line in text.splitlines() if re.match(r"#\d+ ", line)]


class Checker:
    def __init__(self, where):
        self.where = where
        self.failures = 0

    def expect(self, what, ok, text):
        if ok:
            print(f"check-gdb: {self.where}: {what}: ok")
        else:
            self.failures += 1
            print(f"check-gdb: {self.where}: {what}: FAILED; gdb printed:\n{text}\n", file=sys.stderr)

    # A backtrace from `first` to `last` through `contains`, every frame a named function.
    def clean_backtrace(self, what, text, first, contains, last):
        trace = frames(text)
        self.expect(what, bool(trace) and first in trace[0] and last in trace[-1]
                    and all(any(c in frame for frame in trace) for c in contains)
                    and not any(re.search(r" in  \(\)|\?\? \(", frame) for frame in trace)
                    and not re.search(r"Backtrace stopped|corrupt|Python Exception|Error", text), text)

    def check(self, sections):
        listing = sections.get("info fibers", "")
        self.expect("info fibers lists main parked in join, waiting for the producer",
                    re.search(r"^\s+0\s+main\s+parked\s+join, waiting for fiber 1 \(producer\)\s+the "
                              r"thread's own$", listing, re.M), listing)
        self.expect("info fibers lists the producer ready, with its stack",
                    re.search(r"^\s+1\s+producer\s+ready\s+0x[0-9a-f]+-0x[0-9a-f]+$", listing, re.M), listing)
        self.expect("info fibers marks the consumer running",
                    re.search(r"^\s+\*\s+2\s+consumer\s+running\s", listing, re.M), listing)
        self.clean_backtrace("fiber bt 1: the producer from switch_to through produce to the trampoline",
                             sections.get("fiber bt 1", ""), "FiberManager::switch_to",
                             ["FiberManager::yield", "produce", "fiber_main"], "context_trampoline")
        self.clean_backtrace("fiber bt 0: main from switch_to through join to main()",
                             sections.get("fiber bt 0", ""), "FiberManager::switch_to",
                             ["FiberManager::park", "FiberManager::join", "Fiber::join"], "in main")
        self.expect("fiber bt 2: the running consumer is refused",
                    "fiber 2 (consumer) is running" in sections.get("fiber bt 2", ""),
                    sections.get("fiber bt 2", ""))
        self.expect("fiber bt 9: an unknown id is refused",
                    "no fiber 9" in sections.get("fiber bt 9", ""), sections.get("fiber bt 9", ""))
        selected = sections.get("fiber 1, bt", "")
        self.clean_backtrace("fiber 1, then bt: the producer's frames", selected,
                             "FiberManager::switch_to", ["FiberManager::yield", "produce", "fiber_main"],
                             "context_trampoline")
        self.expect("fiber 1, then bt: frame 0, the thread's own, is left out",
                    not any(f.startswith("#0 ") for f in frames(selected)), selected)
        back = sections.get("fiber off, bt", "")
        self.clean_backtrace("fiber off, then bt: the consumer's own frames again", back,
                             "consume", ["fiber_main"], "context_trampoline")


def main(argv):
    demo = os.path.abspath(argv[1] if len(argv) > 1 else "build/lesson2/demo")
    if not shutil.which("gdb"):
        print("check-gdb: gdb is not installed (apt-get install -y gdb); skipped")
        return 0
    failures = 0
    with tempfile.TemporaryDirectory(prefix="check-gdb-") as scratch:
        sections, output = run_gdb([demo], gdb_commands(live=True), scratch)
        if "consume" not in sections.get("start", "") or "info fibers" not in sections:
            print(f"check-gdb: the demo did not stop in consume; gdb printed:\n{output}", file=sys.stderr)
            return 1
        live = Checker("live")
        live.check(sections)
        failures += live.failures

        with open("/proc/sys/kernel/core_pattern", encoding="utf-8") as pattern_file:
            pattern = pattern_file.read().strip()
        cores = [name for name in os.listdir(scratch) if name.startswith("core")]
        if "/" in pattern or pattern.startswith("|"):
            print(f"check-gdb: core file: the kernel's core_pattern is '{pattern}', not a file in the "
                  "current directory; skipped")
        elif not cores:
            print(f"check-gdb: core file: SIGABRT left no core file in {scratch} (core_pattern "
                  f"'{pattern}'); gdb printed:\n{sections.get('abort', '')}", file=sys.stderr)
            failures += 1
        else:
            core_sections, _ = run_gdb([demo, os.path.join(scratch, cores[0])],
                                       gdb_commands(live=False), scratch)
            core = Checker("core file")
            core.check(core_sections)
            failures += core.failures
    if failures:
        print(f"check-gdb: {failures} checks failed", file=sys.stderr)
        return 1
    print("check-gdb: gdb lists the fibers and unwinds each parked one, live and from a core file")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
