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
#   exercises.py check [--lesson N]          make check-exercises: every suite fails
#                                            as shipped; in a scratch copy of the
#                                            tree, every solution makes its suite
#                                            pass (and the stage's tests, when it
#                                            changes the library) and every break
#                                            makes its named tests fail
import argparse
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TREE = ["Makefile", "asm", "include", "src", "lessons", "tests", "scripts"]
JOBS = "-j%d" % (os.cpu_count() or 1)
TIMEOUT = "120"  # seconds a suite may take (tests/main.cpp's watchdog)
BREAK_TIMEOUT = "30"  # seconds a broken test may take: some breaks make a test hang


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


def build_and_run(exercise, cwd, out, quiet):
    """'compile' when the suite does not build, 'fail' or 'pass'."""
    binary = exercise.binary(out)
    if sh(["make", "--no-print-directory", "-s", JOBS, binary], cwd, quiet) != 0:
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
            summary.append("  %s: break it; then %s must fail" % (title, ", ".join(exercise.must_fail)))
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


def scratch_copy():
    """The tree without .git, in a temporary folder of its own, with the stages already
    built in build/lessonN/ (times kept), so that make there rebuilds only what a patch
    touches."""
    scratch = tempfile.mkdtemp(prefix="fib-exercises-")
    for entry in TREE:
        source = os.path.join(ROOT, entry)
        (shutil.copytree if os.path.isdir(source) else shutil.copy2)(source, os.path.join(scratch, entry))
    for stage in glob.glob(os.path.join(ROOT, "build", "lesson[0-9]*")):
        shutil.copytree(stage, os.path.join(scratch, "build", os.path.basename(stage)), symlinks=True)
    return scratch


def apply(patch, cwd, reverse=False):
    command = ["git", "apply"] + (["-R"] if reverse else []) + [patch]
    if sh(command, cwd) != 0:
        sys.exit("%s does not apply%s" % (patch, " in reverse" if reverse else ""))


def check(lesson=None):
    problems, checked = [], 0
    every = [e for n, exercises in lessons().items() for e in exercises if lesson in (None, n)]
    # As shipped, every suite fails.
    for exercise in (e for e in every if e.building):
        result = build_and_run(exercise, ROOT, "build", quiet=True)
        checked += 1
        print("%-44s as shipped: %s" % (exercise.suite, result), flush=True)
        if result == "pass":
            problems.append("%s passes as shipped" % exercise.suite)
    # Each patch in turn, applied to one scratch copy and taken back out again, so
    # that each build after the first recompiles only what the patch touched.
    scratch = scratch_copy()
    try:
        for exercise in every:
            apply(exercise.patch, scratch)
            stage = "build/lesson%d" % exercise.lesson
            if exercise.building:
                result = build_and_run(exercise, scratch, "build", quiet=True)
                if result == "pass" and exercise.touches_library:
                    ok = sh(["make", "-s", JOBS, stage + "/tests"], scratch, True) == 0 and \
                        sh([stage + "/tests", "--gtest_brief=1"], scratch, True,
                           {"FIB_TEST_TIMEOUT": TIMEOUT}) == 0
                    result = "pass" if ok else "breaks the stage's tests"
                print("%-44s solved: %s" % (exercise.name, result), flush=True)
                if result != "pass":
                    problems.append("%s: the solution gives %s" % (exercise.patch, result))
            else:
                for target in exercise.must_fail:
                    if target.startswith("make "):
                        failed = sh(target.split(), scratch, True) != 0
                    else:
                        failed = sh(["make", "-s", JOBS, stage + "/tests"], scratch, True) == 0 and \
                            sh([stage + "/tests", "--gtest_filter=" + target], scratch, True,
                               {"FIB_TEST_TIMEOUT": BREAK_TIMEOUT}) != 0
                    print("%-44s broken: %s %s" % (exercise.name, target,
                                                   "fails" if failed else "still passes"), flush=True)
                    if not failed:
                        problems.append("%s: %s does not fail" % (exercise.patch, target))
            apply(exercise.patch, scratch, reverse=True)
            checked += 1
    finally:
        shutil.rmtree(scratch)
    print("exercises: %d checks, %d problems" % (checked, len(problems)))
    for problem in problems:
        print("  " + problem)
    return 1 if problems else 0


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("command", choices=["run", "check"])
    parser.add_argument("--lesson", type=int)
    parser.add_argument("--only", type=int)
    parser.add_argument("--out", default="build")
    args = parser.parse_args()
    return run(args.lesson, args.only, args.out) if args.command == "run" else check(args.lesson)


if __name__ == "__main__":
    sys.exit(main())
