# docs_pages.py — the HTML pages of the course (make docs): a lesson's page (its README,
# then every file of its reading order annotated, marked with what the lesson adds), a
# page per other Markdown text, the stage diffs, and the frame they share.
import html
import os

import docs_annotate
import docs_markdown
import lessons
import stage
from docs_site import Links, file_id, read

FRAME = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title>
<link rel="stylesheet" href="docs.css">
</head>
<body>
<header class="bar"><a href="index.html">Fibers from scratch</a>{nav}</header>
<main class="{kind}">
{body}
</main>
</body>
</html>
"""


def write(site, name, title, body, kind="text", nav=""):
    with open(os.path.join(site.out, name), "w", encoding="utf-8") as page:
        page.write(FRAME.format(title=html.escape(title), nav=nav, kind=kind, body=body))


def lesson_nav(site, lesson):
    links = []
    if lesson.number > 1:
        links.append('<a href="%s">&larr; lesson %d</a>' % (site.lesson(lesson.number - 1).page, lesson.number - 1))
    if lesson.number < len(site.lessons):
        links.append('<a href="%s">lesson %d &rarr;</a>' % (site.lesson(lesson.number + 1).page, lesson.number + 1))
    return "".join('<span class="sep"> · </span>' + l for l in links)


def file_status(site, lesson, path):
    """What lesson N does to a file, and the link to its stage diff."""
    diff = '<a href="diff-lesson%d.html#%s">stage diff</a>' % (lesson.number, file_id(path))
    if path in lesson.added:
        return "new in lesson %d: every line is new (%s)" % (lesson.number, diff), set()
    if path in lesson.replaces:
        earlier = lesson.replaces[path]
        added = stage.added_lines(earlier, path)
        return ('replaces lesson %d\'s <a href="%s">%s</a>; the %d lines it adds are marked, in the code '
                'and in the prose (%s)'
                % (lessons.lesson_of(earlier), site.file_href(earlier, lesson.number - 1),
                   html.escape(earlier), len(added), diff)), added
    if path.startswith("scripts/"):
        return "course tooling, not part of a stage", set()
    return "from lesson %d, unchanged in this stage" % lessons.lesson_of(path), set()


def file_section(site, lesson, path, links):
    status, added = file_status(site, lesson, path)
    rows = docs_annotate.render(path, read(path), links, lesson.anchors.get(path, {}), added)
    return ('<section class="file" id="%s"><div class="filehead"><h3>%s</h3><p class="status">%s</p>'
            '</div>\n%s</section>' % (file_id(path), html.escape(path), status, rows))


def lesson_page(site, lesson):
    links = Links(site, lesson.number, lesson.folder)
    readme, headings = docs_markdown.render(read(lesson.readme), links)
    toc = "".join('<li><a href="#%s">%s</a></li>' % (anchor, html.escape(text))
                  for level, text, anchor in headings if level == 2)
    toc += '<li><a href="#annotated-source">The annotated source</a></li>'
    parts, shown = [], set()
    for step, (item, files) in enumerate(lesson.order, 1):
        parts.append('<div class="step"><span class="num">%d</span><p>%s</p></div>'
                     % (step, docs_markdown.inline(item.split(" ", 1)[1], links)))
        for path in files:
            if path in shown:
                parts.append('<p class="again">%s: shown above, in <a href="#%s">its section</a>.</p>'
                             % (html.escape(path), file_id(path)))
            else:
                parts.append(file_section(site, lesson, path, links))
                shown.add(path)
    title, _, readme = readme.partition("\n")  # the README's h1, then the contents
    body = ('<article class="readme">%s\n<nav class="toc"><ol>%s</ol></nav>\n%s</article>\n'
            '<h2 id="annotated-source" class="source-title">The annotated source</h2>\n'
            '<p class="howto">The files of the reading order, in order: each comment beside the code it '
            'explains. Lines this lesson adds to a file it replaces are marked; '
            '<a href="diff-lesson%d.html">the stage diff</a> shows every change.</p>\n%s'
            % (title, toc, readme, lesson.number, "\n".join(parts)))
    write(site, lesson.page, lesson.title, body, "lesson", lesson_nav(site, lesson))


def markdown_page(site, path, name):
    number = None if path == "README.md" else lessons.lesson_of(path)
    body, headings = docs_markdown.render(read(path), Links(site, number, os.path.dirname(path)))
    title = headings[0][1] if headings else path
    write(site, name, title, '<article class="readme">%s</article>' % body)


def source_page(site, path, name):
    links = Links(site, lessons.lesson_of(path), os.path.dirname(path))
    rows = docs_annotate.render(path, read(path), links, {}, set())
    body = ('<section class="file" id="%s"><div class="filehead"><h3>%s</h3></div>\n%s</section>'
            % (file_id(path), html.escape(path), rows))
    write(site, name, path, body, "lesson")


def diff_page(site, lesson, files_of_stage, files_of_previous):
    number, replacing, added = stage.changes(files_of_stage, files_of_previous)
    parts, text = [], []
    for earlier, path in replacing + added:
        lines = stage.file_diff(number, earlier, path)
        text += lines
        rows = "".join('<span class="%s">%s</span>' % (
            {"+": "add", "-": "del", "@": "hunk"}.get(line[:1], "ctx"), html.escape(line, quote=False))
            for line in lines)
        parts.append('<h3 id="%s">%s</h3><pre class="diff">%s</pre>' % (file_id(path), html.escape(path), rows))
    with open(os.path.join(site.out, "diff-lesson%d.txt" % number), "w", encoding="utf-8") as plain:
        plain.writelines(text)
    body = ('<h1>Stage %d against stage %d</h1><p>What <a href="%s">lesson %d</a> adds and changes, as '
            '<code>make diff-lesson%d</code> prints it (also as <a href="diff-lesson%d.txt">text</a>): '
            '%d files added, %d replaced.</p>\n%s'
            % (number, number - 1, lesson.page, number, number, number, len(added), len(replacing), "\n".join(parts)))
    write(site, "diff-lesson%d.html" % number, "Stage %d diff" % number, body, "diff", lesson_nav(site, lesson))
