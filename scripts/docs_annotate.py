# docs_annotate.py — one source file as the course's pages show it (make docs), docco
# style: each block of full-line comments (// in C++ and assembly, # in shell) becomes
# prose in the left column, beside the code it precedes in the right column; the code
# keeps its line numbers, is highlighted, and marks the lines new in this lesson.
import html

import docs_highlight
from docs_markdown import inline


def comment_marker(path):
    return "#" if path.endswith(".sh") else "//"


def is_comment(line, marker):
    stripped = line.strip()
    return stripped.startswith(marker) and not stripped.startswith("#!")


def sections(path, text):
    """[([(line number, comment text)], [(line number, code line)])]: each comment block
    with the code after it; a file that starts with code starts with a section without prose."""
    marker, found = comment_marker(path), []
    for number, line in enumerate(text.split("\n"), 1):
        if is_comment(line, marker):
            if not found or found[-1][1]:
                found.append(([], []))
            found[-1][0].append((number, line.strip()[len(marker):]))
        else:
            if not found:
                found.append(([], []))
            found[-1][1].append((number, line))
    return found


def prose(comment_lines, links):
    """A comment block as HTML: paragraphs, "- " lists, and lines indented further
    (diagrams, examples) kept as they are."""
    lines = [l[1:] if l.startswith(" ") else l for l in comment_lines]
    blocks, paragraph, item = [], [], False  # blocks: ("p" | "li" | "pre", html)

    def close():
        if paragraph:
            blocks.append(("li" if item else "p", inline(" ".join(l.strip() for l in paragraph), links)))
            paragraph.clear()

    for line in lines:
        if line.startswith("- "):
            close()
            item = True
            paragraph.append(line[2:])
        elif item and paragraph and line.startswith("  ") and not line.startswith("   "):
            paragraph.append(line)
        elif line.startswith("  "):
            close()
            item = False
            escaped = html.escape(line[2:], quote=False)
            if blocks and blocks[-1][0] == "pre":
                escaped = blocks.pop()[1] + "\n" + escaped
            blocks.append(("pre", escaped))
        elif not line.strip():
            close()
            item = False
        else:
            paragraph.append(line)
    close()
    out = []
    for k, (kind, text) in enumerate(blocks):
        before = blocks[k - 1][0] if k else None
        after = blocks[k + 1][0] if k + 1 < len(blocks) else None
        tag = {"p": "<p>%s</p>", "li": "<li>%s</li>", "pre": '<pre class="inprose">%s</pre>'}[kind] % text
        out.append(("<ul>" if kind == "li" and before != "li" else "") + tag
                   + ("</ul>" if kind == "li" and after != "li" else ""))
    return "\n".join(out)


def code(path, lines, anchors, added):
    """The code column: numbered, highlighted lines; `anchors` maps a line number to the ids
    that start there, `added` is the set of line numbers new in this lesson."""
    if not lines:
        return '<pre class="code empty"></pre>'
    highlighted = docs_highlight.lines("\n".join(l for _, l in lines), docs_highlight.language_of(path))
    out = []
    for (number, _), text in zip(lines, highlighted):
        ids = "".join('<span class="anchor" id="%s"></span>' % a for a in anchors.get(number, []))
        mark = " added" if number in added else ""
        out.append('<span class="line%s">%s<span class="ln">%d</span>%s</span>' % (mark, ids, number, text))
    return '<pre class="code">%s</pre>' % "\n".join(out)


def render(path, text, links, anchors, added):
    """The rows of one file: prose beside code; prose with a line new in this lesson is marked."""
    rows = []
    for comment_lines, code_lines in sections(path, text):
        mark = " added" if any(number in added for number, _ in comment_lines) else ""
        rows.append('<div class="row"><div class="prose%s">%s</div>%s</div>'
                    % (mark, prose([t for _, t in comment_lines], links), code(path, code_lines, anchors, added)))
    return "\n".join(rows)
