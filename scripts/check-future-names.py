#!/usr/bin/env python3
# check-future-names.py — no stage names what only a later lesson defines or uses.
#
#   check-future-names.py "STAGE 1's FILES" "STAGE 2's FILES" ...   (one argument per stage)
#
# For each stage N: the identifiers in the code of later lessons' files that no code of
# stage N has (Waiter, epoll_ctl, fs_base, TimerHeap, ...) must appear nowhere in stage
# N's source files, comments included (string literals do not count as code). A learner reading stage N then meets no member,
# type or call of a lesson still to come. Identifiers count when they look like names
# rather than words: CamelCase, or with an underscore. Nor may a file's comments speak of a
# later lesson by number ("lesson 6 adds ..."). Lesson texts (README.md) may name later
# lessons: their "Left out" says which lesson adds what.
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from lessons import code_text, comment_text, lesson_of  # noqa: E402

IDENTIFIER = re.compile(r"\b[A-Za-z_][A-Za-z0-9_]*\b")
LESSON_NUMBER = re.compile(r"\b(?:[Ll]essons?|[Ss]tages?) (\d+)(?:\s*(?:-|–|to|and)\s*(\d+))?")
SOURCE_SUFFIXES = (".cpp", ".hpp", ".h", ".S")


def is_name(word):
    """CamelCase or snake_case, not a word of prose and not a constant in capitals (EPERM,
    POLLIN: the system's, named wherever they matter)."""
    inner_upper = any(c.isupper() for c in word[1:])
    capitals = not any(c.islower() for c in word)
    return len(word) >= 4 and not capitals and ("_" in word.strip("_") or inner_upper)


def main(stage_lists):
    stages = [[f for f in files.split() if f.endswith(SOURCE_SUFFIXES)] for files in stage_lists]
    every_file = sorted({f for files in stages for f in files})
    code_words = {f: set(IDENTIFIER.findall(code_text(f))) for f in every_file}
    comment_words = {f: set(IDENTIFIER.findall(comment_text(f))) for f in every_file}
    found = 0
    reported = set()  # (file, name): said once, for the first stage that has it
    for number, files in enumerate(stages, start=1):
        mine = set().union(*(code_words[f] for f in files))
        later = set().union(*(code_words[f] for f in every_file if lesson_of(f) > number))
        future = {word for word in later - mine if is_name(word)}
        for path in files:
            for word in sorted(comment_words[path] & future):
                if (path, word) in reported:
                    continue
                reported.add((path, word))
                found += 1
                print(f"check-future-names: stage {number}: {path} names {word}, which only a "
                      f"later lesson's code has", file=sys.stderr)
    for path in every_file:
        for match in LESSON_NUMBER.finditer(comment_text(path)):
            later = max(int(n) for n in match.groups() if n)
            if later > lesson_of(path):
                found += 1
                print(f"check-future-names: {path} (lesson {lesson_of(path)}) speaks of "
                      f"\"{match.group(0)}\" in a comment", file=sys.stderr)
    if found:
        return 1
    print(f"check-future-names: {len(stages)} stages, none names what only a later lesson has")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
