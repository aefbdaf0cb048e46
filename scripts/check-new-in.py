#!/usr/bin/env python3
# check-new-in.py — each lesson's "New in this lesson" list against what its stage really
# changes (make check-tree). The rule it keeps: a lesson adds files or replaces an earlier
# lesson's file by a superset of its own (make diff-lessonN shows both); it never edits an
# earlier lesson's file in place, which the earlier stage would then carry unseen.
#
#   check-new-in.py "STAGE 1's FILES" "STAGE 2's FILES" ...   (the Makefile's stage_files)
#
# For lesson N, with the files of stage N against stage N-1:
#   - a file of the stages that the list names must be one stage N adds or replaces: a
#     file of an earlier lesson named there is an edit in place;
#   - every file stage N adds or replaces is named in the list.
# The list names files as `folder/` followed by `name`s, or as whole paths, or as "the files
# of *Reading order*"; names that are no file of the stages (programs, targets, tools'
# scripts) are not its business.
import fnmatch
import glob
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from lessons import reading_order  # noqa: E402
from stage import changes  # noqa: E402

SPAN = re.compile(r"`([^`]+)`")


def new_in_section(readme):
    with open(readme, encoding="utf-8") as text:
        lines = text.read().split("\n")
    start = next((i for i, l in enumerate(lines) if l.startswith("## New in this lesson")), None)
    if start is None:
        return None
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("## ")), len(lines))
    return lines[start + 1:end]


def named_paths(section):
    """(paths, folders): the files the list names, and the folders it names whole. A bare
    name belongs to the folders named last (`a/`, `b/` and `c/`: each is tried) or to the
    folder of the path named last (`tests/L06_a.cpp`, `L06_b.cpp`); a folder no bare name
    follows stands for all of its files (`lessons/06-time-and-events/`: the servers...)."""
    named, folders, whole, used, last_was_folder = [], [], [], set(), False
    for line in section:
        for span in SPAN.findall(line):
            span = span.strip()
            if " " in span or "=" in span or span.startswith("build/"):
                continue  # a command, an option, a program the build makes
            if span.endswith("/"):
                folders = folders + [span] if last_was_folder else [span]
                whole.append(span)
                last_was_folder = True
                continue
            last_was_folder = False
            if "/" in span:
                named.append(span)
                folders = [os.path.dirname(span) + "/"]
            else:
                named += [folder + span for folder in folders]
                used.update(folders)
    return named, [f for f in whole if f not in used]


def check(number, stage, previous):
    readme = glob.glob("lessons/%02d-*/README.md" % number)[0]
    section = new_in_section(readme)
    if section is None:
        return ["%s: no \"## New in this lesson\" section" % readme]
    _, replacing, added = changes(stage, previous)
    changed = {path for _, path in replacing + added}
    in_stage = set(stage)
    problems = []
    names, folders = named_paths(section)
    if any("Reading order" in line for line in section):  # "the files listed in *Reading order*"
        names += [f for _, files in reading_order(readme, number) for f in files]
    covered = {p for p in changed for f in folders if p.startswith(f)}
    for name in names:
        matches = [p for p in in_stage if fnmatch.fnmatch(p, name)]
        for path in matches:
            if path in changed:
                covered.add(path)
            else:
                problems.append("%s: lists %s, a file of an earlier stage that this lesson neither adds "
                                "nor replaces: an edit in place, which stage %d carries unseen and "
                                "make diff-lesson%d does not show" % (readme, path, number - 1, number))
    for path in sorted(changed - covered):
        if os.path.basename(path) in ("README.md", "APPENDIX.md") or path.endswith(".svg"):
            continue  # the lesson's text and pictures, not what it builds
        problems.append("%s: stage %d %s %s, which its \"New in this lesson\" list does not name"
                        % (readme, number, "replaces" if any(p == path for _, p in replacing) else "adds",
                           path))
    return problems


def main():
    stages = [s.split() for s in sys.argv[1:]]
    problems = []
    for number, stage in enumerate(stages, 1):
        problems += check(number, stage, stages[number - 2] if number > 1 else [])
    for problem in problems:
        print("check-new-in: " + problem)
    if problems:
        sys.exit(1)
    print("check-new-in: %d lessons; each \"New in this lesson\" list names what its stage adds "
          "and replaces, and no earlier lesson's file" % len(stages))


if __name__ == "__main__":
    main()
