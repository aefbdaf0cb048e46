#!/usr/bin/env python3
# exercises.py — the course's exercises: run a lesson's, and check them all (CI).
#
# An exercise is numbered as in its lesson's README and has a reference patch,
# lessons/NN-*/solutions/exK_<name>.patch, whose text before the diff explains it.
#   - A "build it" exercise has a suite, tests/exercises/LNN_exK_<name>_test.cpp,
#     built with the files the learner edits (lessons/NN-*/exercises/exK_<name>/, if
#     any) into an exercise binary of its own: it fails as shipped and passes once
#     solved. Its patch is the reference solution.
#   - A "break it" exercise has no suite: its patch makes the change the README
#     asks for, and its "Must fail:" lines name the tests (or a make target) that
#     must then fail.
#
#   exercises.py run --lesson N [--only K]   make exercise-lessonN: build and run
#                                            each suite alone, print what is solved
#   exercises.py break --lesson N --only K   make break-lessonN EX=K: once the learner
#                                            has made break K in the tree, build the
#                                            tests it names on stage N (with only the
#                                            files that define them) and run each under
#                                            a short watchdog; say whether each fails
#   exercises.py applies                     make check-tree: every reference patch
#                                            applies to the tree as it is (a change to
#                                            a file a patch touches must update it)
#   exercises.py check [--lesson N]          make check-exercises: every suite fails
#                                            as shipped; each patch in a scratch copy
#                                            of its own (side by side, one per core):
#                                            every solution makes its suite pass (and
#                                            the stage's tests, when it changes the
#                                            library) and every break makes its named
#                                            tests fail, built with only the test
#                                            files that define them; and each break's
#                                            README item names those tests
import argparse
import concurrent.futures
import glob
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TREE = ["Makefile", "asm", "include", "src", "lessons", "tests", "scripts"]
TIMEOUT = "120"  # seconds a suite may take (tests/main.cpp's watchdog)
BREAK_TIMEOUT = "10"  # seconds a broken test may take: some breaks make a test hang (a hang is a
#                       failure, as intended; every test of the course passes in well under this)
LEARNER_TIMEOUT = "10"  # the same for make break-lessonN (FIB_TEST_TIMEOUT overrides it)


class Exercise:
    def __init__(self, lesson, patch):
        self.lesson = lesson
        self.name = os.path.basename(patch)[: -len(".patch")]  # exK_<name>
        self.number = int(re.match(r"ex(\d+)_", self.name).group(1))
        self.patch = patch
        with open(patch, encoding="utf-8") as text:
            lines = text.read().split("\n")
        head = lines[: next((i for i, l in enumerate(lines) if l.startswith("diff ")), len(lines))]
        self.must_fail = [l.split(":", 1)[1].strip() for l in head if l.startswith("Must fail:")]
        self.files = [l[len("+++ b/"):] for l in lines if l.startswith("+++ b/")]
        self.touches_library = any(re.match(r"^\+\+\+ b/(asm|include|src)/", l) for l in lines)
        self.suite = os.path.join("tests", "exercises", "L%02d_%s_test.cpp" % (lesson, self.name))
        self.building = os.path.exists(os.path.join(ROOT, self.suite))
        if self.building == bool(self.must_fail):
            sys.exit("%s: a patch needs either a suite (%s) or Must fail: lines, not both"
                     % (patch, self.suite))

    def binary(self, out):
        return os.path.join(out, "lesson%d" % self.lesson, "exercises", self.name)


def lessons(root=ROOT):
    found = {}
    for folder in sorted(glob.glob(os.path.join(root, "lessons", "[0-9][0-9]-*"))):
        lesson = int(os.path.basename(folder)[:2])
        patches = sorted(glob.glob(os.path.join(folder, "solutions", "ex*.patch")))
        found[lesson] = sorted((Exercise(lesson, p) for p in patches), key=lambda e: e.number)
    return found


def sh(command, cwd, quiet=False, env=None):
    """Runs a command; returns its exit status (its output shown unless quiet)."""
    output = subprocess.DEVNULL if quiet else None
    return subprocess.run(command, cwd=cwd, stdout=output, stderr=output,
                          env=dict(os.environ, **(env or {}))).returncode


def own_make():
    """MAKEFLAGS for a make of our own, without the calling make's jobserver, whose fds a
    child does not inherit: that make then takes its own -j, not "jobserver unavailable"."""
    flags = os.environ.get("MAKEFLAGS", "").split()
    return {"MAKEFLAGS": " ".join(f for f in flags if not f.startswith("--jobserver"))}


def build_and_run(exercise, cwd, out, quiet, jobs=()):
    """'compile' when the suite does not build, 'fail' or 'pass'."""
    binary = exercise.binary(out)
    if sh(["make", "--no-print-directory", "-s", *jobs, binary], cwd, quiet) != 0:
        return "compile"
    status = sh([binary, "--gtest_brief=1"], cwd, quiet, {"FIB_TEST_TIMEOUT": TIMEOUT})
    return "pass" if status == 0 else "fail"


def run(lesson, only, out):
    exercises = [e for e in lessons()[lesson] if only is None or e.number == only]
    if not exercises:
        sys.exit("lesson %d has no exercise%s" % (lesson, " %d" % only if only else ""))
    unsolved, summary = 0, []
    for exercise in exercises:
        title = "exercise %d (%s)" % (exercise.number, exercise.name)
        if not exercise.building:
            summary.append("  %s: break it; then %s must fail (make break-lesson%d EX=%d checks)"
                           % (title, ", ".join(exercise.must_fail), lesson, exercise.number))
            continue
        print("== %s: %s" % (title, exercise.suite), flush=True)
        result = build_and_run(exercise, ROOT, out, quiet=False)
        unsolved += result != "pass"
        summary.append("  %s: %s" % (title, {
            "pass": "solved",
            "fail": "not solved yet: the failing checks are above",
            "compile": "not solved yet: it does not compile (the errors are above)"}[result]))
    print("\nlesson %d exercises:\n%s" % (lesson, "\n".join(summary)))
    print("solutions, with why they work: lessons/%s/solutions/" % os.path.basename(
        glob.glob(os.path.join(ROOT, "lessons", "%02d-*" % lesson))[0]))
    return 1 if unsolved else 0


def test_files(names):
    """The test files that define the named tests (Suite.Name), from their TEST lines."""
    files = set()
    for name in names:
        suite, _, test = name.partition(".")
        pattern = re.compile(r"^\s*TEST(?:_F|_P)?\(\s*%s\s*,\s*%s\s*\)" % (re.escape(suite), re.escape(test)),
                             re.MULTILINE)
        found = [f for f in sorted(glob.glob(os.path.join(ROOT, "tests", "L*_test.cpp")))
                 if pattern.search(open(f, encoding="utf-8").read())]
        if not found:
            sys.exit("no test file defines %s" % name)
        files.update(os.path.relpath(f, ROOT) for f in found)
    return sorted(files)


def outcome(status, timeout):
    """How a test binary ended, from its exit status: passed, failed, hung or crashed."""
    if status == 0:
        return "passes"
    if status == 124:  # tests/main.cpp's watchdog
        return "hangs: the watchdog stopped it after %s s" % timeout
    if status < 0:
        return "crashes (%s)" % signal.Signals(-status).name
    return "fails"


def try_break(lesson, only, out):
    """The tests break K names, built from the learner's tree on stage N and each run
    alone under a short watchdog: 0 when every one fails (or hangs, or crashes)."""
    breaks = [e for e in lessons()[lesson] if not e.building]
    chosen = [e for e in breaks if e.number == only]
    if not chosen:
        sys.exit("make break-lesson%d EX=K, where K is a \"break it\" exercise of lesson %d: %s"
                 % (lesson, lesson, ", ".join("%d (%s)" % (e.number, e.name) for e in breaks) or "it has none"))
    exercise = chosen[0]
    timeout = os.environ.get("FIB_TEST_TIMEOUT") or LEARNER_TIMEOUT
    binary = os.path.join(out, "lesson%d" % lesson, "tests-only")
    tests = [t for t in exercise.must_fail if not t.startswith("make ")]
    if tests and sh(["make", "--no-print-directory", binary,
                     "TEST_FILES=" + " ".join(test_files(tests))], ROOT, env=own_make()) != 0:
        sys.exit("break %d.%d: stage %d does not build (the errors are above)" % (lesson, only, lesson))
    results = []
    for target in exercise.must_fail:
        print("== %s" % target, flush=True)
        if target.startswith("make "):
            status = sh(target.split(), ROOT, env=own_make())
        else:
            status = sh([binary, "--gtest_brief=1", "--gtest_filter=" + target], ROOT,
                        env={"FIB_TEST_TIMEOUT": timeout})
        results.append((target, outcome(status, timeout)))
    print("\nbreak %d.%d (%s), on stage %d:" % (lesson, only, exercise.name, lesson))
    for target, result in results:
        print("  %s %s" % (target, result))
    if any(result == "passes" for _, result in results):
        print("not broken yet: make the change in %s, the file stage %d compiles (a later"
              % (" and ".join(exercise.files), lesson))
        print("lesson's copy of it is not built here); %s makes it." % os.path.relpath(exercise.patch, ROOT))
        return 1
    print("broken as the exercise says. git checkout -- %s undoes it." % " ".join(exercise.files))
    return 0


def scratch_copy(lesson):
    """The tree without .git in a temporary folder of its own, with stage N's build copied
    in (times kept) and the precompiled GoogleTest header linked, so that make there
    rebuilds only what a patch touches."""
    scratch = tempfile.mkdtemp(prefix="fib-exercises-")
    for entry in TREE:
        source = os.path.join(ROOT, entry)
        (shutil.copytree if os.path.isdir(source) else shutil.copy2)(source, os.path.join(scratch, entry))
    stage = os.path.join("build", "lesson%d" % lesson)
    if os.path.isdir(os.path.join(ROOT, stage)):
        shutil.copytree(os.path.join(ROOT, stage), os.path.join(scratch, stage), symlinks=True)
    if os.path.isdir(os.path.join(ROOT, "build", "pch")):
        os.symlink(os.path.join(ROOT, "build", "pch"), os.path.join(scratch, "build", "pch"))
    return scratch


def apply(patch, cwd, reverse=False):
    command = ["git", "apply"] + (["-R"] if reverse else []) + [patch]
    if sh(command, cwd) != 0:
        sys.exit("%s does not apply%s" % (patch, " in reverse" if reverse else ""))


def make(targets, cwd, variables=()):
    return sh(["make", "--no-print-directory", "-s", "-j1"] + list(variables) + targets, cwd, True) == 0


def as_shipped(exercise):
    """Every suite fails as shipped (built in the tree itself: nothing is changed there)."""
    result = build_and_run(exercise, ROOT, "build", quiet=True, jobs=["-j1"])
    line = "%-44s as shipped: %s" % (exercise.suite, result)
    return line, ["%s passes as shipped" % exercise.suite] if result == "pass" else []


def patched(exercise):
    """In a scratch copy of its own, the solution passes, or the break fails what it names."""
    scratch = scratch_copy(exercise.lesson)
    try:
        if "tests/gtest_pch.hpp" in open(exercise.patch, encoding="utf-8").read():
            sys.exit("%s changes tests/gtest_pch.hpp, which scratch copies share" % exercise.patch)
        apply(exercise.patch, scratch)
        stage = "build/lesson%d" % exercise.lesson
        if exercise.building:
            result = build_and_run(exercise, scratch, "build", quiet=True, jobs=["-j1"])
            if result == "pass" and exercise.touches_library:
                ok = make([stage + "/tests"], scratch) and \
                    sh([stage + "/tests", "--gtest_brief=1"], scratch, True, {"FIB_TEST_TIMEOUT": TIMEOUT}) == 0
                result = "pass" if ok else "breaks the stage's tests"
            line = "%-44s solved: %s" % (exercise.name, result)
            return line, ["%s: the solution gives %s" % (exercise.patch, result)] if result != "pass" else []
        lines, problems = [], []
        for target in exercise.must_fail:
            if target.startswith("make "):
                failed = sh(target.split(), scratch, True) != 0
                result = "fails"
            elif not make([stage + "/tests-only"], scratch, ["TEST_FILES=" + " ".join(test_files([target]))]):
                # Only the test file that defines the named test is built, with the library.
                lines.append("%-44s broken: %s does not build" % (exercise.name, target))
                problems.append("%s: the broken tree does not build %s" % (exercise.patch, target))
                continue
            else:
                result = outcome(sh([stage + "/tests-only", "--gtest_filter=" + target], scratch, True,
                                    {"FIB_TEST_TIMEOUT": BREAK_TIMEOUT}), BREAK_TIMEOUT)
                failed = result != "passes"
            lines.append("%-44s broken on stage %d: %s %s" % (
                exercise.name, exercise.lesson, target, result if failed else "still passes"))
            if not failed:
                problems.append("%s: %s does not fail" % (exercise.patch, target))
        return "\n".join(lines), problems
    finally:
        shutil.rmtree(scratch)


def worded(exercise):
    """The README's item for a break names every test it must fail."""
    folder = glob.glob(os.path.join(ROOT, "lessons", "%02d-*" % exercise.lesson))[0]
    text = open(os.path.join(folder, "README.md"), encoding="utf-8").read()
    section = text.split("## Exercises", 1)[-1].split("\n## ", 1)[0]
    item = re.search(r"^%d\. \*\*Break it(.*?)(?=^\d+\. \*\*|\Z)" % exercise.number, section, re.M | re.S)
    if not item:
        return ["%s: exercise %d is no \"Break it\" item" % (os.path.relpath(folder, ROOT), exercise.number)]
    words = " ".join(item.group(1).split())
    wanted = [t if t.startswith("make ") else t.partition(".")[2] for t in exercise.must_fail]
    return ["%s/README.md, exercise %d: does not say %s" % (os.path.relpath(folder, ROOT), exercise.number, w)
            for w in wanted if w not in words]


def check(lesson=None):
    """Every suite as shipped, then every patch in a scratch copy of its own. The checks of
    each phase are independent, so they run side by side, one per core; the second phase
    starts when the first is done, as it copies the builds the first writes to."""
    every = [e for n, exercises in lessons().items() for e in exercises if lesson in (None, n)]
    phases = [[(as_shipped, e) for e in every if e.building], [(patched, e) for e in every]]
    problems = [p for e in every if not e.building for p in worded(e)]
    with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        for work in phases:
            for line, found in pool.map(lambda job: job[0](job[1]), work):
                print(line, flush=True)
                problems += found
    print("exercises: %d checks, %d problems" % (sum(map(len, phases)), len(problems)))
    for problem in problems:
        print("  " + problem)
    return 1 if problems else 0


def applies():
    """Every patch applies to the tree as it is (git apply --check, in the tree itself)."""
    every = [e for exercises in lessons().values() for e in exercises]
    stale = [e.patch for e in every if sh(["git", "apply", "--check", e.patch], ROOT, True) != 0]
    for patch in stale:
        print("%s does not apply to the tree: remake it against the files it changes" % os.path.relpath(patch, ROOT))
    if not stale:
        print("exercises: %d reference patches, each applies to the tree" % len(every))
    return 1 if stale else 0


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("command", choices=["run", "break", "check", "applies"])
    parser.add_argument("--lesson", type=int)
    parser.add_argument("--only", type=int)
    parser.add_argument("--out", default="build")
    args = parser.parse_args()
    if args.command == "run":
        return run(args.lesson, args.only, args.out)
    if args.command == "break":
        return try_break(args.lesson, args.only, args.out)
    if args.command == "applies":
        return applies()
    return check(args.lesson)


if __name__ == "__main__":
    sys.exit(main())
