# lessons.py — what the tree says about lessons: which lesson a path belongs to, and
# which lines of a source file are code. Shared by the checks and stage.py.
import glob
import os
import re

# asm/NN-*/, include/NN-*/, src/NN-*/, lessons/NN-*/ and tests/LNN_*, tests/bench/LNN_*.
_FOLDER = re.compile(r"^(asm|include|src|lessons)/(\d\d)-[^/]+/")
_PREFIX = re.compile(r"^tests/(?:bench/)?L(\d\d)_")


def lesson_of(path):
    """The lesson a file belongs to; files of no lesson (tests/main.cpp, the bench's
    main and helpers) are built from stage 1 on, so they count as lesson 1's."""
    match = _FOLDER.match(path)
    if match:
        return int(match.group(2))
    match = _PREFIX.match(path)
    return int(match.group(1)) if match else 1


def library_name(path):
    """For a library file, (kind, name) shared by a file and its replacements:
    ("include", "fib/waiter.hpp"), ("src", "waiter.cpp"), ("asm", "switch_context.S");
    None for any other file."""
    match = _FOLDER.match(path)
    if not match or match.group(1) == "lessons":
        return None
    return match.group(1), path[match.end():]


def _in_number(text, i):
    """Whether the ' at text[i] is inside a numeric literal (a C++14 digit separator):
    the run of letters, digits and separators before it starts with a digit."""
    j = i
    while j > 0 and (text[j - 1].isalnum() or text[j - 1] in "'_"):
        j -= 1
    return j < i and text[j].isdigit() and i + 1 < len(text) and text[i + 1].isalnum()


def segments(text):
    """Splits C++ or assembly source into ("code", text), ("string", text) and
    ("comment", text) pieces: // and /* */ comments, and string or character literals."""
    pieces, code, i, n = [], [], 0, len(text)
    while i < n:
        c = text[i]
        if c == "'" and _in_number(text, i):
            code.append(c)  # a digit separator, as in 20'000
            i += 1
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            j = min(j, n - 1) if text[j:j + 1] != "\n" else j - 1  # an unclosed one keeps its newline
            pieces.append(("code", "".join(code)))
            pieces.append(("string", text[i:j + 1]))
            code, i = [], j + 1
        elif text.startswith("//", i) or text.startswith("/*", i):
            end = text.find("\n", i) if text[i + 1] == "/" else text.find("*/", i + 2) + 2
            end = n if end < (2 if text[i + 1] == "*" else 0) else end
            pieces.append(("code", "".join(code)))
            pieces.append(("comment", text[i:end]))
            code, i = [], end
        else:
            code.append(c)
            i += 1
    pieces.append(("code", "".join(code)))
    return pieces


def _read(path):
    with open(path, encoding="utf-8") as source:
        return source.read()


def code_lines(path):
    """The non-blank lines of code of a source file, comments dropped, whitespace collapsed."""
    text = "".join(t if kind != "comment" else "\n" * t.count("\n") for kind, t in segments(_read(path)))
    return [" ".join(line.split()) for line in text.splitlines() if line.strip()]


def code_text(path):
    """The code of a source file without its comments and its string literals."""
    return " ".join(t for kind, t in segments(_read(path)) if kind == "code")


def comment_text(path):
    return "\n".join(t for kind, t in segments(_read(path)) if kind == "comment")


def lesson_folders(number):
    """The folders lesson N's files live in, as listed in the tree: lessons/NN-*/ first."""
    folders = []
    for pattern in ("lessons/%02d-*/", "include/%02d-*/fib/", "src/%02d-*/", "asm/%02d-*/"):
        folders += sorted(glob.glob(pattern % number))
    return folders


_FILE_SPAN = re.compile(r"`([\w./-]*?)(?:\{([\w,]+)\})?(\.[A-Za-z]+)?`")
_SOURCE_EXT = (".cpp", ".hpp", ".h", ".S", ".py", ".sh")


def _expand(span_match):
    """`a.{hpp,cpp}` -> a.hpp, a.cpp; `a.cpp` -> a.cpp."""
    stem, braces, ext = span_match.groups()
    names = [stem + b for b in braces.split(",")] if braces else [stem + (ext or "")]
    return [n for n in names if n.endswith(_SOURCE_EXT)]


def reading_order(readme, number):
    """The "## Reading order" list of lesson N's README: a list of (item text, files), each
    file a path from the top of the tree. A bare name is looked for beside the file named
    before it, then in the lesson's folders; the first folder that has it wins."""
    text = _read(readme)
    start = text.find("\n## Reading order")
    section = text[start:text.find("\n## ", start + 1)]
    items = re.split(r"\n(?=\d+\. )", section)[1:]
    order, previous = [], None
    for item in items:
        files = []
        for span in _FILE_SPAN.finditer(item):
            for name in _expand(span):
                places = [name] if "/" in name else []
                places += [os.path.join(os.path.dirname(previous), name)] if previous else []
                places += [os.path.join(folder, name) for folder in lesson_folders(number)]
                found = next((p for p in places if os.path.isfile(p)), None)
                if found:
                    files.append(found)
                    previous = found
        order.append((" ".join(item.split()), files))
    return order
