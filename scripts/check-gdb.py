#!/usr/bin/env python3
# check-gdb.py — lesson 2: gdb's fiber commands (scripts/fib_gdb.py), live and on core files.
#
#   check-gdb.py [DEMO [ECHO_SERVER]]
#       (default: build/lesson2/demo build/lesson10/echo_server; make check-gdb)
#
# Stops lesson 2's demo where the consumer fiber starts: main is parked in join,
# waiting for the producer, which yielded inside produce(). `info fibers` must list
# the three with their states and main's wait site; `fiber bt` of the producer and
# of main must run from switch_to down to context_trampoline and main(); `fiber 1`
# then `bt` must show the producer's frames, `fiber off` the consumer's again. Then
# SIGABRT makes the kernel write a core file (in a scratch directory, as the
# relative core_pattern "core" says), and the same checks run on it: gdb's own
# gcore would not do, it writes the fiber stacks as zeros (lessons/02-fibers/APPENDIX.md).
# Where core_pattern sends cores elsewhere, the core file checks say they are skipped.
#
# Then the same commands where frame 0 is a C function, in the idle echo_server,
# attached and from its core file: check_gdb_server.py. What both use (gdb in batch
# mode, sections of its output, core files, one line per check): check_gdb_session.py.
import os
import re
import shutil
import sys
import tempfile

import check_gdb_server
from check_gdb_session import MARK, Checker, frames, gdb_arguments, run_gdb

COMMANDS = [
    ("info fibers", "info fibers"),
    ("fiber bt 1", "fiber bt 1"),
    ("fiber bt 0", "fiber bt 0"),
    ("fiber bt 2", "fiber bt 2"),
    ("fiber bt 9", "fiber bt 9"),
    ("fiber 1, bt", "fiber 1\nbt"),
    ("fiber off, bt", "fiber off\nbt"),
]


def check_demo(checker, sections):
    listing = sections.get("info fibers", "")
    checker.expect("info fibers lists main parked in join, waiting for the producer",
                   re.search(r"^\s+0\s+main\s+parked\s+join, waiting for fiber 1 \(producer\)\s+the "
                             r"thread's own$", listing, re.M), listing)
    producer = re.search(r"^\s+1\s+producer\s+ready\s+0x[0-9a-f]+-0x[0-9a-f]+, (\d+\.\d)/64 KiB used$",
                         listing, re.M)
    checker.expect("info fibers lists the producer ready, with its stack", producer, listing)
    checker.expect("info fibers says how much of the producer's stack was written: some, not all",
                   producer and 0 < float(producer.group(1)) < 64, listing)
    checker.expect("info fibers marks the consumer running",
                   re.search(r"^\s+\*\s+2\s+consumer\s+running\s", listing, re.M), listing)
    checker.clean_backtrace("fiber bt 1: the producer from switch_to through produce to the trampoline",
                            sections.get("fiber bt 1", ""), "FiberManager::switch_to",
                            ["FiberManager::yield", "produce", "fiber_main"], "context_trampoline")
    checker.clean_backtrace("fiber bt 0: main from switch_to through join to main()",
                            sections.get("fiber bt 0", ""), "FiberManager::switch_to",
                            ["FiberManager::park", "FiberManager::join", "Fiber::join"], "in main")
    checker.expect("fiber bt 2: the running consumer is refused",
                   "fiber 2 (consumer) is running" in sections.get("fiber bt 2", ""),
                   sections.get("fiber bt 2", ""))
    checker.expect("fiber bt 9: an unknown id is refused",
                   "no fiber 9" in sections.get("fiber bt 9", ""), sections.get("fiber bt 9", ""))
    selected = sections.get("fiber 1, bt", "")
    checker.clean_backtrace("fiber 1, then bt: the producer's frames", selected,
                            "FiberManager::switch_to", ["FiberManager::yield", "produce", "fiber_main"],
                            "context_trampoline")
    checker.expect("fiber 1, then bt: frame 0, the thread's own, is left out",
                   not any(f.startswith("#0 ") for f in frames(selected)), selected)
    back = sections.get("fiber off, bt", "")
    checker.clean_backtrace("fiber off, then bt: the consumer's own frames again", back,
                            "consume", ["fiber_main"], "context_trampoline")


def check_stopped_demo(demo):
    """The demo stopped in consume, then its core file: the number of failed checks."""
    with tempfile.TemporaryDirectory(prefix="check-gdb-") as scratch:
        sections, output = run_gdb([demo], gdb_arguments(["break consume", "run"], COMMANDS,
                                                         [f"echo {MARK}abort\\n", "signal SIGABRT"]),
                                   scratch)
        if "consume" not in sections.get("start", "") or "info fibers" not in sections:
            print(f"check-gdb: the demo did not stop in consume; gdb printed:\n{output}", file=sys.stderr)
            return 1
        live = Checker("demo, live")
        check_demo(live, sections)
        core = Checker("demo, core file")
        core_file = core.core_file(scratch, sections.get("abort", ""))
        if core_file:
            core_sections, _ = run_gdb([demo, core_file], gdb_arguments([], COMMANDS), scratch)
            check_demo(core, core_sections)
        return live.failures + core.failures


def main(argv):
    demo = os.path.abspath(argv[1] if len(argv) > 1 else "build/lesson2/demo")
    server = os.path.abspath(argv[2] if len(argv) > 2 else "build/lesson10/echo_server")
    sys.stdout.reconfigure(line_buffering=True)  # each line in its place among stderr's
    if not shutil.which("gdb"):
        print("check-gdb: gdb is not installed (apt-get install -y gdb); skipped")
        return 0
    failures = check_stopped_demo(demo) + check_gdb_server.check_idle_server(server)
    if failures:
        print(f"check-gdb: {failures} checks failed", file=sys.stderr)
        return 1
    print("check-gdb: gdb lists the fibers and unwinds each parked one, live and from a core file, "
          "in the demo stopped in a fiber and in the idle echo_server stopped in epoll_wait")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
