#!/usr/bin/env python3
# stage.py — one stage of the course, alone (make stage-lessonN), and what it changes
# against the stage before (make diff-lessonN). The Makefile says which files a stage
# has; this script only copies and compares them.
#
#   stage.py copy --stage N --to DIR --flags F --test-flags TF --cpath C --lib L --demo D --tests T
#                 --bench B --probes P [--program NAME=SOURCES]... FILES...
#   stage.py diff "STAGE N's FILES" "STAGE N-1's FILES"
import argparse
import difflib
import os
import shutil
import signal
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from lessons import lesson_of, library_name  # noqa: E402

STAGE_MAKEFILE = """\
# Makefile — stage {stage} of the course alone, written by `make stage-lesson{stage}`.
#   make        the library, the demo and the programs
#   make test   the tests of lessons 1..{stage}, built as all_tests (needs GoogleTest: libgtest-dev)
#   make bench  the benchmark rows of lessons 1..{stage}
CXX      := g++
CXXFLAGS := {flags}
# The include folders, the latest lesson's first (a header a later lesson replaces is found
# there first), as CPATH, which g++ searches as if each were given with -I. The course's
# Makefile compiles so too: a compiler cache (CXX="ccache g++") then hands back the objects
# that build made, as their command lines are the same.
export CPATH := {cpath}
# -MMD -MP: each object's header list (a .d file beside it), so that an edited header
# rebuilds what includes it.
CPPFLAGS := -MMD -MP
objects   = $(addsuffix .o,$(basename $(1)))

LIB   := {lib}
DEMO  := {demo}
TESTS := {tests}
BENCH := {bench}
{program_lists}
all: libfib.a demo{programs}

# The test files that use GoogleTest: compiled without variable tracking (the course's
# Makefile says why), with GoogleTest's header compiled once and put in front of each
# (tests/gtest_pch.hpp says what that saves).
GTEST_TESTS := $(filter tests/main.cpp %_test.cpp,$(TESTS))
TEST_CXXFLAGS := {test_flags}
PCH := build/pch/gtest_pch.hpp
PCH_FLAGS := $(CXXFLAGS) $(TEST_CXXFLAGS)
$(PCH).gch: tests/gtest_pch.hpp
	mkdir -p $(@D) && cp $< $(PCH)
	$(CXX) $(PCH_FLAGS) -x c++-header $(PCH) -o $@
$(call objects,$(GTEST_TESTS)): CPPFLAGS += -Winvalid-pch -include $(PCH)
$(call objects,$(GTEST_TESTS)): CXXFLAGS += $(TEST_CXXFLAGS)
$(call objects,$(GTEST_TESTS)): $(PCH).gch

libfib.a: $(call objects,$(LIB))
\trm -f $@ && ar rcs $@ $^
%.o: %.cpp
\t$(CXX) $(CPPFLAGS) $(CXXFLAGS) -c $< -o $@
%.o: %.S
\t$(CXX) $(CPPFLAGS) $(CXXFLAGS) -c $< -o $@
demo: $(call objects,$(DEMO)) libfib.a
\t$(CXX) $^ -lpthread -o $@
{program_rules}{probe_rules}{object_flags}all_tests: $(call objects,$(TESTS)) libfib.a{probe_libs}
\t$(CXX) $(call objects,$(TESTS)) libfib.a{probe_link} -lgtest -lpthread -o $@
test: all_tests
\t./all_tests
bench: $(call objects,$(BENCH)) libfib.a
\t$(CXX) $^ -lpthread -o $@
\t./bench
clean:
\tfind . -name '*.o' -delete -o -name '*.d' -delete; rm -f libfib.a demo all_tests bench *.so{programs}
.PHONY: all test clean
-include $(shell find . -name '*.d')
"""


def copy(args):
    if os.path.exists(args.to):
        shutil.rmtree(args.to)
    for path in args.files:
        os.makedirs(os.path.join(args.to, os.path.dirname(path)), exist_ok=True)
        shutil.copy2(path, os.path.join(args.to, path))
    programs = dict(p.split("=", 1) for p in args.program)
    probes = args.probes.split()
    probe_libs = [os.path.basename(p)[:-len(".cpp")] + ".so" for p in probes]
    text = STAGE_MAKEFILE.format(
        stage=args.stage, flags=args.flags, test_flags=args.test_flags, cpath=args.cpath, lib=args.lib,
        demo=args.demo, tests=args.tests, bench=args.bench,
        program_lists="".join(f"SOURCES_{name} := {srcs}\n" for name, srcs in programs.items()),
        programs="".join(f" {name}" for name in programs),
        program_rules="".join(f"{name}: $(call objects,$(SOURCES_{name})) libfib.a\n"
                              f"\t$(CXX) $^ -lpthread -o $@\n" for name in programs),
        probe_rules="".join(f"{so}: {src}\n\t$(CXX) $(CPPFLAGS) $(CXXFLAGS) -fPIC -shared $< -o $@\n"
                            for so, src in zip(probe_libs, probes)),
        probe_libs="".join(f" {so}" for so in probe_libs),
        object_flags="".join(f"{src.rsplit('.', 1)[0]}.o: CXXFLAGS += {flags}\n"
                             for src, flags in (f.split("=", 1) for f in args.object_flags)),
        probe_link="".join(f" ./{so}" for so in probe_libs) + (" -Wl,-rpath,$(CURDIR)" if probes else ""))
    with open(os.path.join(args.to, "Makefile"), "w", encoding="utf-8") as makefile:
        makefile.write(text)
    print(f"stage-lesson{args.stage}: {len(args.files)} files in {args.to}/; "
          f"`make` there builds stage {args.stage} alone, `make test` runs its tests")
    return 0


def read_lines(path):
    if path is None:
        return []
    with open(path, encoding="utf-8", errors="replace") as f:
        return f.readlines()


def changes(stage, previous):
    """What stage N's files change against stage N-1's: (number, replacing, added), where
    replacing lists (earlier file, file) and added lists (None, file)."""
    number = max(lesson_of(f) for f in stage)
    replaced = {library_name(f): f for f in previous if library_name(f)}
    added, replacing = [], []
    for path in stage:
        if path in previous:
            continue
        earlier = replaced.get(library_name(path)) if library_name(path) else None
        (replacing if earlier else added).append((earlier, path))
    return number, replacing, added


def file_diff(number, earlier, path):
    """The unified diff of one file against the one it replaces (or /dev/null), as lines."""
    return list(difflib.unified_diff(
        read_lines(earlier), read_lines(path),
        fromfile=f"stage {number - 1}: {earlier or '/dev/null'}", tofile=f"stage {number}: {path}"))


def added_lines(earlier, path):
    """The numbers (from 1) of the lines of `path` that the file it replaces lacks."""
    matcher = difflib.SequenceMatcher(None, read_lines(earlier), read_lines(path), autojunk=False)
    return {j + 1 for tag, _, _, j1, j2 in matcher.get_opcodes() if tag in ("insert", "replace")
            for j in range(j1, j2)}


def diff(stage_files, previous_files):
    number, replacing, added = changes(stage_files.split(), previous_files.split())
    print(f"# diff-lesson{number}: stage {number} against stage {number - 1}: "
          f"{len(added)} files added, {len(replacing)} replaced")
    for earlier, path in replacing:
        print(f"#   {path} replaces {earlier}")
    for _, path in added:
        print(f"#   {path} is new")
    for earlier, path in replacing + added:
        sys.stdout.writelines(file_diff(number, earlier, path))
    return 0


def main(argv):
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # `make diff-lessonN | less`, quit early: no trace
    if len(argv) > 1 and argv[1] == "diff":
        return diff(argv[2], argv[3] if len(argv) > 3 else "")
    parser = argparse.ArgumentParser(prog="stage.py copy")
    parser.add_argument("command", choices=["copy"])
    for flag in ("--stage", "--to", "--flags", "--test-flags", "--cpath", "--lib", "--demo", "--tests", "--bench",
                 "--probes"):
        parser.add_argument(flag, required=True)
    parser.add_argument("--program", action="append", default=[])
    parser.add_argument("--object-flags", action="append", default=[])
    parser.add_argument("files", nargs="+")
    return copy(parser.parse_args(argv[1:]))


if __name__ == "__main__":
    sys.exit(main(sys.argv))
