# check_gdb_session.py — lesson 2: what make check-gdb's checks share: gdb in batch mode with
# its output cut into named sections, the kernel's core files, one line per check.
#
# scripts/check-gdb.py checks lesson 2's demo with it, check_gdb_server.py the idle echo_server.
import os
import re
import resource
import subprocess
import sys

MARK = "@@check-gdb@@ "


def gdb_arguments(before, sections, after=()):
    """gdb's -ex arguments: the commands BEFORE, then each section's commands after a line
    that names it, then AFTER. Each -ex runs even when the one before fails (a file of
    commands would stop at its first error)."""
    lines = ["set pagination off", "set width 0", "set confirm off", *before]
    for name, commands in sections:
        lines.append(f"echo {MARK}{name}\\n")
        lines += commands.split("\n")
    lines += after
    return [argument for line in lines for argument in ("-ex", line)]


def run_gdb(arguments, commands, cwd):
    """gdb's output, cut into sections at each MARK line ("start" before the first); and the
    whole of it. ARGUMENTS start with the program, whose directory gdb is told to trust so
    that it loads the fib_gdb.py the program embeds."""
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
    """In a child before it starts the program: let the kernel write its core file."""
    _, hard = resource.getrlimit(resource.RLIMIT_CORE)
    resource.setrlimit(resource.RLIMIT_CORE, (hard, hard))


def frames(text):
    return [line for line in text.splitlines() if re.match(r"#\d+ ", line)]


class Checker:
    """Prints one line per check, "...: ok" or "...: FAILED" with what gdb printed, and
    counts the failures."""

    def __init__(self, where):
        self.where = where
        self.failures = 0

    def expect(self, what, ok, text):
        if ok:
            print(f"check-gdb: {self.where}: {what}: ok")
        else:
            self.failures += 1
            print(f"check-gdb: {self.where}: {what}: FAILED; gdb printed:\n{text}\n", file=sys.stderr)

    # A backtrace from `first` to `last` through `contains`, every frame a named function,
    # after the heading `fiber bt` prints, if one is given.
    def clean_backtrace(self, what, text, first, contains, last, heading=None):
        trace = frames(text)
        self.expect(what, bool(trace) and first in trace[0] and last in trace[-1]
                    and (heading is None or heading in text)
                    and all(any(c in frame for frame in trace) for c in contains)
                    and not any(re.search(r" in  \(\)|\?\? \(", frame) for frame in trace)
                    and not re.search(r"Backtrace stopped|corrupt|Python Exception|Error", text), text)

    def core_file(self, scratch, what_happened):
        """The core file the kernel wrote in SCRATCH (the relative core_pattern "core" puts
        it in the process's directory), or None. Where core_pattern sends cores elsewhere
        (a path, or a pipe to a program such as systemd-coredump), the check says it is
        skipped; where the core should be here and is not, that is a failure, with
        WHAT_HAPPENED, the output of what was to dump it."""
        with open("/proc/sys/kernel/core_pattern", encoding="utf-8") as pattern_file:
            pattern = pattern_file.read().strip()
        cores = sorted(name for name in os.listdir(scratch) if name.startswith("core"))
        if "/" in pattern or pattern.startswith("|"):
            print(f"check-gdb: {self.where}: the kernel's core_pattern is '{pattern}', not a file "
                  "in the current directory; skipped")
            return None
        if not cores:
            self.failures += 1
            print(f"check-gdb: {self.where}: SIGABRT left no core file in {scratch} (core_pattern "
                  f"'{pattern}'); it printed:\n{what_happened}", file=sys.stderr)
            return None
        return os.path.join(scratch, cores[0])
