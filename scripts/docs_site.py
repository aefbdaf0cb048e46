# docs_site.py — what the course's pages (make docs) are made of and where each thing
# lands: the lessons with their READMEs, reading orders and stages, the page and anchor
# of every annotated file and symbol, and the links from a text to them.
import glob
import os
import re
import shutil

import docs_symbols
import lessons
import stage

IMAGE_EXT = (".svg", ".png", ".jpg", ".jpeg", ".gif")


def read(path):
    with open(path, encoding="utf-8") as source:
        return source.read()


def file_id(path):
    return "file-" + path.replace("/", "-")


class Lesson:
    def __init__(self, number, files_of_stage, files_of_previous):
        self.number = number
        self.readme = glob.glob("lessons/%02d-*/README.md" % number)[0]
        self.folder = os.path.dirname(self.readme)
        self.title = read(self.readme).split("\n", 1)[0].lstrip("# ").strip()
        self.page = "lesson%d.html" % number
        self.order = lessons.reading_order(self.readme, number)
        self.files = list(dict.fromkeys(f for _, files in self.order for f in files))
        _, replacing, added = stage.changes(files_of_stage, files_of_previous)
        self.replaces = {path: earlier for earlier, path in replacing}
        self.added = {path for _, path in added}
        self.symbols = {}  # name -> anchor id, the first definition in reading order winning
        self.members = {}  # the last part of a qualified name (Class::member) -> anchor id
        self.anchors = {}  # path -> {line number: [anchor ids]}
        for path in self.files:
            self.anchors[path], seen = {}, set()
            for line, name in docs_symbols.symbols(path, read(path)):
                anchor = file_id(path) + "--" + name.replace("::", ".")
                if anchor not in seen:  # an overload's anchor is its first declaration's
                    seen.add(anchor)
                    self.anchors[path].setdefault(line, []).append(anchor)
                self.symbols.setdefault(name, anchor)
                self.members.setdefault(name.rpartition("::")[2], anchor)


class Site:
    def __init__(self, out, stages):
        self.out = out
        self.lessons = [Lesson(n, stages[n - 1].split(), stages[n - 2].split() if n > 1 else [])
                        for n in range(1, len(stages) + 1)]
        self.pages = {}        # a Markdown file other than a lesson's README -> its page
        self.source_pages = {}  # a linked source file no reading order lists -> its page

    def lesson(self, number):
        return self.lessons[number - 1]

    def search_order(self, number):
        """The lessons whose pages a text of lesson `number` links into, nearest first; the
        root README's (number None) go to the earliest lesson that has the name."""
        if number is None:
            return self.lessons
        return [self.lesson(n) for n in range(number, 0, -1)]

    def file_href(self, path, number):
        for lesson in self.search_order(number) + self.lessons:
            if path in lesson.files:
                return "%s#%s" % (lesson.page, file_id(path))
        page = self.source_pages.setdefault(path, "source-%s.html" % path.replace("/", "-"))
        return page

    def md_href(self, path):
        if path == "README.md":
            return "readme.html"
        for lesson in self.lessons:
            if path == lesson.readme:
                return lesson.page
        name = "lesson%d-%s.html" % (lessons.lesson_of(path), os.path.basename(path)[:-3].lower())
        return self.pages.setdefault(path, name)

    def image_href(self, path):
        """An image's copy in images/; a missing one is left for check-docs to report."""
        name = path.replace("/", "-")
        if os.path.isfile(path):
            os.makedirs(os.path.join(self.out, "images"), exist_ok=True)
            shutil.copyfile(path, os.path.join(self.out, "images", name))
        return "images/" + name


class Links:
    """How a text of lesson `number` (None: the root README) in `folder` links."""

    def __init__(self, site, number, folder):
        self.site, self.number, self.folder = site, number, folder

    def href(self, target):
        if re.match(r"[a-z]+:", target):
            return target
        path, _, anchor = target.partition("#")
        path = os.path.normpath(os.path.join(self.folder, path)) if path else None
        if path is None:
            return "#" + anchor
        if path.lower().endswith(IMAGE_EXT):
            return self.site.image_href(path)
        if path.endswith(".md"):
            return self.site.md_href(path) + ("#" + anchor if anchor else "")
        return self.site.file_href(path, self.number)

    def code(self, name):
        """The link of a name in backticks: a file of a reading order, or a symbol."""
        lessons_in_reach = self.site.search_order(self.number)
        for lesson in lessons_in_reach:
            for path in lesson.files:
                if name in (path, os.path.basename(path)):
                    return "%s#%s" % (lesson.page, file_id(path))
        key = re.sub(r"<[^<>]*>$", "", re.sub(r"\(.*\)$", "", name))
        key = key[len("fib::"):] if key.startswith("fib::") else key
        # The name as written; else a member by its own name (FinalAwaiter), in this lesson
        # only; else, for a member the scanner does not list (a field), its class.
        own = lessons_in_reach[:1] if self.number else lessons_in_reach
        for table, name, reach in (("symbols", key, lessons_in_reach), ("members", key, own),
                                   ("symbols", key.rpartition("::")[0], lessons_in_reach)):
            for lesson in reach:
                if name and name in getattr(lesson, table):
                    return "%s#%s" % (lesson.page, getattr(lesson, table)[name])
        return None
