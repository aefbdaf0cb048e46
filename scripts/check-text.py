#!/usr/bin/env python3
# check-text.py — the lesson texts agree with the code: every name a README (or its
# appendix) puts in backticks exists, and every demo transcript is what the demo prints.
#
#   check-text.py names                 files, make targets, test names and code
#                                       symbols in backticks exist in the tree, and
#                                       every relative link reaches its file and heading
#   check-text.py transcript N OUTPUT   the demo output shown in lesson N's "Build and
#                                       run" appears, line by line and in order, in
#                                       OUTPUT (what make run-lessonN printed), once
#                                       run-dependent values are masked: ports
#                                       and addresses
#   check-text.py measured              (also part of names) in a lesson's "## Measured",
#                                       every ratio or time is a range over rounds
#                                       (1.1–1.6x), or its paragraph or table row
#                                       names the `make bench...` command that made it
import glob
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TEXTS = ["README.md"] + sorted(glob.glob("lessons/*/README.md")) + sorted(glob.glob("lessons/*/APPENDIX.md"))
CODE_DIRS = ["asm", "include", "src", "lessons", "tests", "scripts"]
CODE_EXT = (".cpp", ".hpp", ".h", ".S", ".py", ".sh")

# Names the texts quote from outside the course's code (the kernel, libc, the ABI, tools)
# that the code itself never spells.
EXTERNAL = set("""
    swtch.S rt_sigprocmask rstorssp saveprevssp pthread_cond_wait select DEL epoll_pwait2
    THREAD_SETMEM __ctype_init h_errno strtok PTHREAD_PRIO_PROTECT co_await
    SO_INCOMING_CPU SO_ATTACH_REUSEPORT_EBPF net.ipv4.tcp_migrate_req=1 __tsan_switch_to_fiber pthread_setaffinity_np
    co_yield IORING_OP_ACCEPT IORING_OP_MSG_RING
""".split())


def read(path):
    with open(os.path.join(ROOT, path), encoding="utf-8") as text:
        return text.read()


def code_words():
    words, files = set(), set()
    for folder in CODE_DIRS:
        for dirpath, _, names in os.walk(os.path.join(ROOT, folder)):
            for name in names:
                path = os.path.relpath(os.path.join(dirpath, name), ROOT)
                files.add(path)
                if name.endswith(CODE_EXT) or name == "Makefile":
                    words.update(re.findall(r"[A-Za-z_~][A-Za-z0-9_]*", read(path)))
    files.update(f for f in ("Makefile", "README.md", ".ci/run") if os.path.exists(os.path.join(ROOT, f)))
    words.update(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", read("Makefile")))
    return words, files


def make_targets():
    database = subprocess.run(["make", "-pnq", "-C", ROOT], capture_output=True, text=True).stdout
    return set(re.findall(r"^([A-Za-z0-9_.%/-]+):", database, re.M))


def test_names():
    names = set()
    for path in glob.glob(os.path.join(ROOT, "tests", "**", "*.cpp"), recursive=True):
        for suite, test in re.findall(r"^TEST(?:_F)?\((\w+),\s*(\w+)\)", read(path), re.M):
            names.add(suite + "." + test)
    return names


def spans(text):
    """Backticked spans outside fenced blocks."""
    return re.findall(r"`([^`\n]+)`", text)


def check_names():
    words, files = code_words()
    targets, tests = make_targets(), test_names()
    basenames = {os.path.basename(f) for f in files}
    problems = []
    for text in TEXTS:
        folder = os.path.dirname(text)
        for span in spans(read(text)):
            span = span.strip()
            problem = None
            if span in EXTERNAL:
                continue
            if span.startswith("make "):
                for word in span.split("&&")[0].split()[1:]:
                    if "=" in word or word.startswith("-") or word.startswith("$"):
                        continue
                    lessons = range(1, 10) if "lessonN" in word else [0]
                    if not any(word.replace("lessonN", "lesson%d" % n) in targets for n in lessons):
                        problem = "no make target %s" % word
            elif re.fullmatch(r"[\w./-]+\.(cpp|hpp|h|S|py|sh|md)", span) and not span.startswith("build/"):
                candidates = {span, os.path.normpath(os.path.join(folder, span))}
                if not (candidates & files) and os.path.basename(span) not in basenames \
                        and not any(f.endswith("/" + span) for f in files):
                    problem = "no file %s" % span
            elif re.fullmatch(r"L\d\d_\w+\.(\w+|\*)", span):
                suite, test = span.split(".")
                if test == "*":
                    if not any(t.startswith(suite + ".") for t in tests):
                        problem = "no test suite %s" % suite
                elif span not in tests:
                    problem = "no test %s" % span
            elif re.fullmatch(r"[A-Za-z_][\w]*(::~?[A-Za-z_]\w*)*(\(\))?", span):
                for part in re.findall(r"~?[A-Za-z_]\w*", span):
                    if part not in words and part not in EXTERNAL:
                        problem = "no code names %s" % part
            if problem:
                problems.append("%s: `%s`: %s" % (text, span, problem))
    problems += check_links()
    problems += check_measured()
    for problem in problems:
        print(problem)
    print("check-text: %d texts; %s" % (len(TEXTS), "%d names not found" % len(problems)
                                          if problems else "every backticked name exists"))
    return 1 if problems else 0


def slug(heading):
    """The anchor GitHub gives a heading."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def check_links():
    """Every relative link of the texts reaches a file, and its #anchor a heading there."""
    problems = []
    for text in TEXTS:
        for target in re.findall(r"\]\(([^)\s]+)\)", read(text)):
            if re.match(r"[a-z]+:", target):
                continue
            path, _, anchor = target.partition("#")
            linked = os.path.normpath(os.path.join(os.path.dirname(text), path)) if path else text
            if not os.path.exists(os.path.join(ROOT, linked)):
                problems.append("%s: link to %s: no such file" % (text, target))
            elif anchor and linked.endswith(".md"):
                headings = re.findall(r"^#+ (.*)$", read(linked), re.M)
                if anchor not in {slug(h) for h in headings}:
                    problems.append("%s: link to %s: no such heading" % (text, target))
    return problems


# A ratio (1.4x, 1.4×, 35 times) or a time (4.5 ns, 21.4 µs, 1.1 ms) in a text.
NUMBER = r"\d[\d,]*(?:\.\d+)?"
UNIT = r"(?:\s?[x×](?![\w])|\s(?:times|ns|µs|us|ms)\b)"
MEASURE = re.compile(NUMBER + UNIT)
# A range, "1.1–1.6x", "8,000–17,000", "4.2 ns–4.8 ns", or a median with its range in
# parentheses, "10.8 µs (1.5–22.2)": these state the spread, and are fine.
RANGE = re.compile(r"%s%s?\s?[–-]\s?%s%s?|%s%s?\s*\(%s\s?[–-]\s?%s[^)]*\)"
                   % (NUMBER, UNIT, NUMBER, UNIT, NUMBER, UNIT, NUMBER, NUMBER))
# A table column whose cells are ratios, or times, even without a unit: its header says so.
RATIO_HEADER = re.compile(r"ratio|speed-up| / |compared")
TIME_HEADER = re.compile(r"\b(ns|µs|ms)\b")
# The command that reproduces a number: `make bench-lesson4`, `ROUNDS=3 make bench`.
COMMAND = re.compile(r"`(?:[A-Z_]+=\S+ )*make bench[\w-]*")


def measured_blocks(text):
    """The paragraphs, list items and table rows of a text's "## Measured" section, each
    as (text, its table's header cells or None, the paragraph just above its table)."""
    start = text.find("\n## Measured")
    if start < 0:
        return []
    end = text.find("\n## ", start + 1)
    lines = text[start:end if end > 0 else len(text)].split("\n")[2:]
    blocks, paragraph, header, caption = [], [], None, ""
    for line in lines + [""]:
        if line.startswith("|"):
            if paragraph:
                caption = " ".join(paragraph)
                blocks.append((caption, None, ""))
                paragraph = []
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if header is None:
                header = cells
            elif not all(re.fullmatch(r":?-+:?", c) for c in cells if c):
                blocks.append((line, header, caption))
            continue
        if header is not None:
            header, caption = None, ""
        if not line.strip() or re.match(r"\s*[-*] ", line):
            if paragraph:
                caption = " ".join(paragraph)
                blocks.append((caption, None, ""))
            paragraph = [line] if line.strip() else []
        else:
            paragraph.append(line)
    return blocks


def single_numbers(block, header, caption):
    """The ratios and times a paragraph or table row states as one number, not a range.
    A paragraph or row that names its command may state single numbers; in a table whose
    caption names the command, times may be one run's medians, but ratios, the figures
    that travel between machines, are ranges."""
    if COMMAND.search(block):
        return []
    if not header:
        block = RANGE.sub("", re.sub(r"`[^`]*`", "", block))
        return [m.group(0) for m in MEASURE.finditer(block)]
    found = []
    times_named = bool(COMMAND.search(caption))
    # The first cell names the figure and how it was made ("200 µs per read"): no result.
    cells = [c.strip() for c in block.strip().strip("|").split("|")]
    for title, cell in list(zip(header, cells))[1:]:
        cell = RANGE.sub("", re.sub(r"`[^`]*`", "", cell))
        ratio_column = RATIO_HEADER.search(title)
        for number in MEASURE.finditer(cell):
            is_ratio = re.search(r"[x×]$|times$", number.group(0))
            if is_ratio or not times_named:
                found.append(number.group(0))
        if re.fullmatch(NUMBER, cell.strip()) and (ratio_column or (TIME_HEADER.search(title)
                                                                    and not times_named)):
            found.append(cell.strip())
    return found


def check_measured():
    problems = []
    for text in sorted(glob.glob("lessons/*/README.md")):
        for block, header, caption in measured_blocks(read(text)):
            for number in single_numbers(block, header, caption):
                problems.append("%s: Measured states %s as one number: give the range over rounds"
                                " (a–b), or name the `make bench...` command in its paragraph or"
                                " row: %s" % (text, number, block.strip()[:100]))
    return problems


def transcript_blocks(readme):
    """The indented blocks of "## Build and run" that show output (no commands in them)."""
    text = read(readme)
    start = text.find("## Build and run")
    section = text[start:text.find("\n## ", start + 1)]
    blocks, block = [], []
    for line in section.split("\n") + [""]:
        if line.startswith("    "):
            block.append(line[4:].rstrip())
        elif line.strip() == "" and block:
            blocks.append(block)
            block = []
    return [b for b in blocks if not any(l.startswith(("make ", "$ ", "build/")) for l in b)]


def mask(line):
    line = re.sub(r"127\.0\.0\.1:\d+", "127.0.0.1:PORT", line)
    line = re.sub(r"0x[0-9a-f]+", "0xADDR", line)
    return line.rstrip()


def check_transcript(lesson, output_path):
    readme = glob.glob(os.path.join(ROOT, "lessons", "%02d-*" % lesson, "README.md"))[0]
    with open(output_path, encoding="utf-8", errors="replace") as output:
        printed = [mask(l) for l in output.read().split("\n")]
    problems, shown = [], 0
    for block in transcript_blocks(os.path.relpath(readme, ROOT)):
        at = 0
        for line in block:
            if line.strip() in ("...", "") or line.strip().startswith("..."):
                continue
            shown += 1
            pattern = re.escape(mask(line))
            found = next((i for i in range(at, len(printed)) if re.fullmatch(pattern, printed[i])), None)
            if found is None:
                problems.append(line)
            else:
                at = found + 1
    for line in problems:
        print("lesson %d's README shows a line the demo did not print: %s" % (lesson, line))
    print("check-text: lesson %d: %d transcript lines, %d not printed by the demo"
          % (lesson, shown, len(problems)))
    return 1 if problems or shown == 0 else 0


def main():
    if sys.argv[1:2] == ["names"]:
        return check_names()
    if sys.argv[1:2] == ["measured"]:
        problems = check_measured()
        print("\n".join(problems + ["check-text: %d numbers in Measured sections without a range"
                                    " or a command" % len(problems)]))
        return 1 if problems else 0
    if sys.argv[1:2] == ["transcript"] and len(sys.argv) == 4:
        return check_transcript(int(sys.argv[2]), sys.argv[3])
    sys.exit("usage: check-text.py names | measured | transcript N OUTPUT")


if __name__ == "__main__":
    os.chdir(ROOT)
    sys.exit(main())
