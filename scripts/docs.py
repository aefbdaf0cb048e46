#!/usr/bin/env python3
# docs.py — renders the course as pages that work offline (make docs): an index with the
# lessons and a glossary, and per lesson one page with its README and every file of its
# reading order annotated, prose beside code; the stage diffs; the other Markdown texts.
#
#   docs.py --out DIR --stage "STAGE 1's FILES" ... --stage "STAGE N's FILES"
#
# The Makefile passes each stage's files (what make diff-lessonN compares).
import argparse
import os
import re
import shutil
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import docs_glossary  # noqa: E402
import docs_markdown  # noqa: E402
import docs_pages  # noqa: E402
from docs_site import Links, Site, read  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def index(site):
    """The lessons, each with its line from the root README's table, and the glossary."""
    links = Links(site, None, "")
    lines = dict(re.findall(r"^\| (\d+) \| \[[^\]]*\]\([^)]*\) \| (.*) \|$", read("README.md"), re.M))
    items = "".join('<li><a href="%s">%s</a><br><span class="line">%s</span></li>'
                    % (lesson.page, lesson.title, docs_markdown.inline(lines.get(str(lesson.number), ""), links))
                    for lesson in site.lessons)
    body = ('<h1>Fibers from scratch</h1>\n<p>A C++ course that builds a fiber scheduler for x86-64 Linux (and arm64, lessons 1–6), '
            'one layer per lesson. Each lesson\'s page shows its README, then every file of its reading '
            'order with the comments as prose beside the code. The course\'s <a href="readme.html">README</a> '
            'says how to build and run it.</p>\n<h2 id="lessons">The lessons</h2>\n<ol class="lessons">%s</ol>\n'
            '<h2 id="glossary">Glossary</h2>\n%s' % (items, docs_glossary.glossary_html(site)))
    docs_pages.write(site, "index.html", "Fibers from scratch", body, "text")


def main():
    parser = argparse.ArgumentParser(description="Render the course's pages.")
    parser.add_argument("--out", required=True)
    parser.add_argument("--stage", action="append", required=True)
    args = parser.parse_args()
    started = time.monotonic()
    os.chdir(ROOT)
    if os.path.exists(args.out):
        shutil.rmtree(args.out)
    os.makedirs(args.out)
    shutil.copyfile("scripts/docs.css", os.path.join(args.out, "docs.css"))
    site = Site(args.out, args.stage)
    for lesson in site.lessons:
        docs_pages.lesson_page(site, lesson)
        previous = args.stage[lesson.number - 2].split() if lesson.number > 1 else []
        docs_pages.diff_page(site, lesson, args.stage[lesson.number - 1].split(), previous)
    index(site)
    docs_pages.markdown_page(site, "README.md", "readme.html")
    written = set()
    while (set(site.pages) | set(site.source_pages)) - written:
        for path, name in list(site.pages.items()) + list(site.source_pages.items()):
            if path not in written:
                written.add(path)
                (docs_pages.markdown_page if path.endswith(".md") else docs_pages.source_page)(site, path, name)
    pages = len([f for f in os.listdir(args.out) if f.endswith(".html")])
    print("docs: %d pages in %s/ (%.1f s); open %s/index.html"
          % (pages, args.out, time.monotonic() - started, args.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
