#!/usr/bin/env python3
# check-layers.py — fails if a file of stage N includes what its own lesson may not see.
#
#   check-layers.py --stage N --headers "STAGE N's HEADERS" DEPFILES...
#   check-layers.py --self-test
#
# The dependency files come from the compiler (-MMD): they say which files stage N
# really compiled and included. For each of those files, of lesson K (from its folder or
# prefix), its own #include "..." lines are checked:
#   - a library header it names (fib/waiter.hpp) must be one that lesson K or an earlier
#     lesson defines; the file the stage finds may be a later lesson's replacement of it;
#   - a header it names by a relative path must belong to lesson K or earlier;
# and every library header the stage included must be the one stage N uses, not one that
# a later lesson of the stage replaced (a relative path could reach one).
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from lessons import lesson_of, library_name  # noqa: E402


def dependencies(depfile):
    """(source, [project files it included]) from a make-style dependency file."""
    with open(depfile, encoding="utf-8") as deps:
        text = deps.read().replace("\\\n", " ")
    first_rule = text.split("\n", 1)[0]
    _, _, prerequisites = first_rule.partition(":")
    files = [f for f in prerequisites.split() if not os.path.isabs(f)]
    return files[0], [os.path.normpath(f) for f in files[1:]]


def earliest_lessons(root):
    """For each library header name (fib/x.hpp), the first lesson that has one."""
    first = {}
    include = os.path.join(root, "include")
    for folder in sorted(os.listdir(include)) if os.path.isdir(include) else []:
        for dirpath, _, names in os.walk(os.path.join(include, folder)):
            for name in names:
                path = os.path.relpath(os.path.join(dirpath, name), root)
                key = library_name(path)
                if key:
                    first.setdefault(key, lesson_of(path))
    return first


INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.MULTILINE)


def own_includes(path, root):
    """The quoted #include names in a file, as written."""
    with open(os.path.join(root, path), encoding="utf-8") as source:
        return INCLUDE.findall(source.read())


def problems(stage, stage_headers, depfiles, root="."):
    first = earliest_lessons(root)
    stage_headers = set(stage_headers)
    found, compiled = [], set()
    for depfile in depfiles:
        source, included = dependencies(depfile)
        compiled.add(source)
        compiled.update(f for f in included if f.startswith(("include/", "lessons/", "tests/")))
        for header in included:
            key = library_name(header)
            if key and key[0] == "include" and header not in stage_headers:
                found.append(f"{source} includes {header}, which a later lesson of stage "
                             f"{stage} replaces; include \"{key[1]}\"")
    for path in sorted(compiled):
        lesson = lesson_of(path)
        if lesson > stage:
            found.append(f"stage {stage} compiles {path}, of lesson {lesson}")
        for name in own_includes(path, root):
            target = os.path.normpath(os.path.join(os.path.dirname(path), name))
            if os.path.exists(os.path.join(root, target)):
                if lesson_of(target) > lesson:
                    found.append(f"{path} (lesson {lesson}) includes {target}, of lesson "
                                 f"{lesson_of(target)}")
            elif ("include", name) in first and first[("include", name)] > lesson:
                found.append(f"{path} (lesson {lesson}) includes {name}, which lesson "
                             f"{first[('include', name)]} adds")
    return found


# ---- The self-test: real compiler output for files that break the rules, in a scratch tree.
SCRATCH = {
    "include/02-fibers/fib/fiber_manager.hpp": "",
    "include/04-echo-server/fib/fiber_manager.hpp": "",
    "include/04-echo-server/fib/waiter.hpp": "",
    "include/06-time-and-events/fib/timer.hpp": "",
    "lessons/06-time-and-events/stop_signals.hpp": "",
    # A lesson-4 program that includes a lesson-6 header of lessons/ by a relative path.
    "lessons/04-echo-server/echo_main.cpp": '#include "../06-time-and-events/stop_signals.hpp"\n',
    # A lesson-2 test that includes a lesson-6 library header.
    "tests/L02_manager_test.cpp": '#include "fib/timer.hpp"\n',
    # A lesson-2 file that reaches the header lesson 4 replaced, by a relative path.
    "src/02-fibers/fiber.cpp": '#include "../../include/02-fibers/fib/fiber_manager.hpp"\n',
    # Allowed: a lesson-2 file gets lesson 4's replacement of a lesson-2 header, and a
    # lesson-4 test includes a lesson-4 header.
    "src/02-fibers/fiber_manager.cpp": '#include "fib/fiber_manager.hpp"\n',
    "tests/L04_waiter_test.cpp": '#include "fib/waiter.hpp"\n#include "fib/fiber_manager.hpp"\n',
}
EXPECTED_BAD = {"lessons/04-echo-server/echo_main.cpp", "tests/L02_manager_test.cpp",
                "src/02-fibers/fiber.cpp"}


def self_test():
    with tempfile.TemporaryDirectory() as root:
        for path, text in SCRATCH.items():
            os.makedirs(os.path.join(root, os.path.dirname(path)), exist_ok=True)
            with open(os.path.join(root, path), "w", encoding="utf-8") as f:
                f.write(text)
        stage = 6
        include = [f"-Iinclude/{d}" for d in
                   ("06-time-and-events", "04-echo-server", "02-fibers")]
        stage_headers = ["include/04-echo-server/fib/fiber_manager.hpp",
                         "include/04-echo-server/fib/waiter.hpp",
                         "include/06-time-and-events/fib/timer.hpp"]
        verdicts = {}
        for path in SCRATCH:
            if not path.endswith(".cpp"):
                continue
            depfile = os.path.join(root, path + ".d")
            subprocess.run(["g++", "-std=c++20", *include, "-MM", "-MF", depfile, path],
                           cwd=root, check=True)
            verdicts[path] = bool(problems(stage, stage_headers, [depfile], root))
    wrong = [path for path, bad in verdicts.items() if bad != (path in EXPECTED_BAD)]
    for path in wrong:
        print(f"check-layers self-test: {path} was "
              f"{'refused' if verdicts[path] else 'let through'}", file=sys.stderr)
    if wrong:
        return 1
    print(f"check-layers: self-test refused {len(EXPECTED_BAD)} bad includes and let "
          f"{len(verdicts) - len(EXPECTED_BAD)} good ones through")
    return 0


def main(argv):
    if argv[1:] == ["--self-test"]:
        return self_test()
    if len(argv) < 5 or argv[1] != "--stage" or argv[3] != "--headers":
        print("usage: check-layers.py --stage N --headers \"HEADERS\" DEPFILES... | --self-test",
              file=sys.stderr)
        return 2
    found = problems(int(argv[2]), argv[4].split(), argv[5:])
    for problem in found:
        print(f"layer check: {problem}", file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
