# lessons.py — what the tree says about lessons: which lesson a path belongs to, and
# which lines of a source file are code. Shared by the checks and stage.py.
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


def segments(text):
    """Splits C++ or assembly source into ("code", text), ("string", text) and
    ("comment", text) pieces: // and /* */ comments, and string or character literals."""
    pieces, code, i, n = [], [], 0, len(text)
    while i < n:
        c = text[i]
        if c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
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
