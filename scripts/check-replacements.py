#!/usr/bin/env python3
# check-replacements.py — a later lesson's replacement of a library file only adds to it.
#
#   check-replacements.py LIBRARY_FILES...   (every lesson's asm/, src/ and include/ files)
#
# A file in a later lesson's folder with the name of an earlier lesson's file replaces it
# from that stage on (see the Makefile). The replacement must keep every line of code of
# the file it replaces, in order, and only add lines between them; comments may change
# and whitespace does not count. So what the earlier lesson's text explains stays true in
# every later stage, and a fix to the earlier file that is not carried over to its
# replacement shows up here.
import os
import sys
from collections import defaultdict

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from lessons import code_lines, lesson_of, library_name  # noqa: E402


def missing_lines(earlier, later):
    """The lines of `earlier` that `later` does not keep in order (greedy subsequence)."""
    missing, position = [], 0
    for line in earlier:
        try:
            position = later.index(line, position) + 1
        except ValueError:
            missing.append(line)
    return missing


def main(files):
    versions = defaultdict(list)
    for path in files:
        key = library_name(path)
        if key:
            versions[key].append(path)
    failures = replacements = 0
    for key, paths in sorted(versions.items()):
        paths.sort(key=lesson_of)
        for earlier, later in zip(paths, paths[1:]):
            replacements += 1
            missing = missing_lines(code_lines(earlier), code_lines(later))
            if missing:
                failures += 1
                print(f"check-replacements: {later} replaces {earlier} but drops or changes "
                      f"{len(missing)} of its lines of code:", file=sys.stderr)
                for line in missing[:10]:
                    print(f"    {line}", file=sys.stderr)
    if failures:
        return 1
    print(f"check-replacements: {replacements} replaced library files, each keeps every line "
          "of code of the file it replaces")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
