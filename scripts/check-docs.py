#!/usr/bin/env python3
# check-docs.py — checks the course's pages (make docs) against the tree: every page parses
# as HTML with balanced tags, every internal link and #anchor resolves, every file of every
# reading order has its section on its lesson's page, every comment block of the file shows
# there as prose, and every other line of the file shows as code, in order, with its number.
#
#   check-docs.py DOCS_DIR
import glob
import html.parser
import os
import re
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import lessons  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VOID = {"meta", "link", "img", "br", "hr", "input", "source", "wbr"}


class Page(html.parser.HTMLParser):
    """One page: its ids, its links, tag balance problems, and per file section the prose
    text and the (number, text) of each code line."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.stack, self.problems, self.ids, self.links = [], [], set(), []
        self.files, self.file, self.line = {}, None, None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if "id" in attrs:
            if attrs["id"] in self.ids:
                self.problems.append("id %s twice" % attrs["id"])
            self.ids.add(attrs["id"])
        for name in ("href", "src"):
            if attrs.get(name):
                self.links.append(attrs[name])
        if tag in VOID:
            return
        classes = (attrs.get("class") or "").split()
        if tag == "section" and "file" in classes:
            self.file = self.files.setdefault(attrs["id"], {"prose": [], "code": []})
        if tag == "span" and "line" in classes and self.file is not None:
            self.line = [len(self.stack), "", ""]  # depth, number, text
        self.stack.append((tag, classes))

    def handle_endtag(self, tag):
        if tag in VOID:
            return
        if not self.stack or self.stack[-1][0] != tag:
            self.problems.append("</%s> at line %d closes <%s>" % (tag, self.getpos()[0],
                                                                   self.stack[-1][0] if self.stack else "nothing"))
            return
        self.stack.pop()
        if self.line is not None and len(self.stack) == self.line[0]:
            self.file["code"].append((int(self.line[1]), self.line[2]))
            self.line = None
        if tag == "section" and self.file is not None and not any(t == "section" for t, _ in self.stack):
            self.file = None

    def handle_data(self, data):
        if self.line is not None:
            self.line[1 if "ln" in self.stack[-1][1] else 2] += data
        elif self.file is not None and any("prose" in c for _, c in self.stack):
            self.file["prose"].append(data)


def words(text):
    return " ".join(re.findall(r"[A-Za-z0-9_]+", text))


def check_file(path, section):
    """The file's comment blocks are in the prose, its other lines are the code lines."""
    marker = "#" if path.endswith(".sh") else "//"
    with open(os.path.join(ROOT, path), encoding="utf-8") as source:
        lines = source.read().split("\n")
    comment = [l.strip().startswith(marker) and not l.strip().startswith("#!") for l in lines]
    problems, blocks, block = [], [], []
    for line, is_comment in zip(lines + [""], comment + [False]):
        if is_comment:
            block.append(line.strip()[len(marker):])
        elif block:
            blocks.append(words(" ".join(block)))
            block = []
    prose = " " + words(" ".join(section["prose"])) + " "
    for text in blocks:
        if text and " %s " % text not in prose:
            problems.append("%s: a comment block is not in the prose: %s..." % (path, text[:60]))
    code = [(n, l) for n, (l, c) in enumerate(zip(lines, comment), 1) if not c]
    if section["code"] != code:
        lost = next((c for c in code if c not in section["code"]), None)
        problems.append("%s: %d code lines on the page, %d in the file (%d comment lines); first "
                        "missing: %s" % (path, len(section["code"]), len(code), sum(comment), lost))
    return problems, len(blocks), len(code)


def main():
    docs = sys.argv[1]
    started = time.monotonic()
    os.chdir(ROOT)
    pages, problems = {}, []
    for path in sorted(glob.glob(os.path.join(docs, "*.html"))):
        page = Page()
        with open(path, encoding="utf-8") as text:
            page.feed(text.read())
        page.close()
        if page.stack:
            page.problems.append("unclosed: %s" % " ".join(t for t, _ in page.stack))
        problems += ["%s: %s" % (os.path.basename(path), p) for p in page.problems]
        pages[os.path.basename(path)] = page
    links = 0
    for name, page in pages.items():
        for link in page.links:
            if re.match(r"[a-z]+:", link):
                continue
            links += 1
            target, _, anchor = link.partition("#")
            target = target or name
            if not os.path.exists(os.path.join(docs, target)):
                problems.append("%s: link to %s: no such file" % (name, link))
            elif anchor and (target not in pages or anchor not in pages[target].ids):
                problems.append("%s: link to %s: no such anchor" % (name, link))
    files = blocks = code_lines = 0
    for readme in sorted(glob.glob("lessons/*/README.md")):
        number = lessons.lesson_of(readme)
        page = pages.get("lesson%d.html" % number)
        for path in dict.fromkeys(f for _, fs in lessons.reading_order(readme, number) for f in fs):
            section = page.files.get("file-" + path.replace("/", "-")) if page else None
            if section is None:
                problems.append("lesson%d.html: no section for %s" % (number, path))
                continue
            found, b, c = check_file(path, section)
            problems += ["lesson%d.html: %s" % (number, p) for p in found]
            files, blocks, code_lines = files + 1, blocks + b, code_lines + c
    for problem in problems:
        print("check-docs: " + problem)
    print("check-docs: %d pages parse; %d internal links checked; %d files of the reading orders: "
          "%d comment blocks as prose, %d code lines; %s (%.1f s)"
          % (len(pages), links, files, blocks, code_lines,
             "%d problems" % len(problems) if problems else "no problems", time.monotonic() - started))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
