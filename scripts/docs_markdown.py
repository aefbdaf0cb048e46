# docs_markdown.py — the Markdown the course's READMEs use, rendered to HTML for the
# course's pages (make docs): headings with GitHub's anchors, paragraphs, nested lists,
# indented code blocks, tables, **bold**, *italic*, `code`, links and images.
#
# Links are rewritten by the caller: `Links.href(target)` for [text](target) and
# ![alt](target), `Links.code(name)` for a name in backticks (None: no link).
import html
import re

INLINE = re.compile(r"`([^`\n]+)`|!\[([^\]]*)\]\(([^)\s]+)\)|\[([^\]]+)\]\(([^)\s]+)\)"
                    r"|\*\*(.+?)\*\*|\*([^*\s](?:[^*]*?[^*\s])?)\*")
ITEM = re.compile(r"^( *)([-*]|\d+\.) +")


def slug(heading):
    """The anchor GitHub gives a heading (as scripts/check-text.py checks links)."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def inline(text, links):
    out, at = [], 0
    for match in INLINE.finditer(text):
        out.append(html.escape(text[at:match.start()], quote=False))
        code, alt, src, label, target, bold, italic = match.groups()
        if code is not None:
            href = links.code(code.strip())
            span = "<code>%s</code>" % html.escape(code, quote=False)
            out.append('<a class="sym" href="%s">%s</a>' % (href, span) if href else span)
        elif src is not None:
            out.append('<img src="%s" alt="%s">' % (html.escape(links.href(src)), html.escape(alt)))
        elif target is not None:
            out.append('<a href="%s">%s</a>' % (html.escape(links.href(target)), inline(label, links)))
        elif bold is not None:
            out.append("<strong>%s</strong>" % inline(bold, links))
        else:
            out.append("<em>%s</em>" % inline(italic, links))
        at = match.end()
    out.append(html.escape(text[at:], quote=False))
    return "".join(out)


def indent_of(line):
    return len(line) - len(line.lstrip(" "))


def _list_block(lines, i):
    """The lines of the list that starts at lines[i], split into items (each a list of
    lines with the marker's indent removed), the list's kind and its first number."""
    base = indent_of(lines[i])
    marker = ITEM.match(lines[i]).group(2)
    items, n = [], len(lines)
    while i < n and (m := ITEM.match(lines[i])) and indent_of(lines[i]) == base:
        width = m.end()
        item = [lines[i][width:]]
        i += 1
        while i < n:
            line = lines[i]
            if not line.strip():
                following = next((l for l in lines[i:] if l.strip()), "")
                if indent_of(following) <= base:
                    break
                item.append("")
            elif indent_of(line) <= base and (ITEM.match(line) or not item[-1].strip()):
                break
            else:
                item.append(line[min(width, indent_of(line)):])
            i += 1
        items.append(item)
        if i < n and not lines[i].strip():
            following = next((j for j in range(i, n) if lines[j].strip()), n)
            if following < n and ITEM.match(lines[following]) and indent_of(lines[following]) == base:
                i = following
    kind = "ol" if marker[0].isdigit() else "ul"
    return items, kind, int(marker[:-1]) if kind == "ol" else 1, i


def _table(rows, links):
    cells = [[c.strip() for c in r.strip().strip("|").split("|")] for r in rows]
    aligns = ["right" if c.endswith(":") else "left" for c in cells[1]]
    head = "".join("<th>%s</th>" % inline(c, links) for c in cells[0])
    body = "".join("<tr>%s</tr>" % "".join('<td class="%s">%s</td>' % (a, inline(c, links))
                                           for c, a in zip(row, aligns)) for row in cells[2:])
    return '<div class="table"><table><thead><tr>%s</tr></thead><tbody>%s</tbody></table></div>' % (head, body)


def blocks(lines, links, headings):
    """Renders a list of lines; appends (level, text, id) of each heading to `headings`."""
    out, i, n = [], 0, len(lines)
    while i < n:
        line = lines[i]
        if not line.strip():
            i += 1
        elif m := re.match(r"(#{1,6}) +(.*)", line):
            level, text = len(m.group(1)), m.group(2).strip()
            headings.append((level, text, slug(text)))
            out.append('<h%d id="%s">%s</h%d>' % (level, slug(text), inline(text, links), level))
            i += 1
        elif line.startswith("|") and i + 1 < n and re.match(r"\|[-:| ]+\|\s*$", lines[i + 1]):
            j = i
            while j < n and lines[j].startswith("|"):
                j += 1
            out.append(_table(lines[i:j], links))
            i = j
        elif ITEM.match(line):
            items, kind, start, i = _list_block(lines, i)
            rendered = []
            for item in items:
                body = blocks(item, links, headings)
                tight = body.count("<p>") == 1 and body.startswith("<p>")
                rendered.append("<li>%s</li>" % (body[3:].replace("</p>", "", 1) if tight else body))
            attr = ' start="%d"' % start if start != 1 else ""
            out.append("<%s%s>%s</%s>" % (kind, attr, "".join(rendered), kind))
        elif indent_of(line) >= 4:
            j = i
            while j < n and (indent_of(lines[j]) >= 4 or not lines[j].strip()):
                j += 1
            while not lines[j - 1].strip():
                j -= 1
            code = "\n".join(l[4:] for l in lines[i:j])
            out.append('<pre class="block">%s</pre>' % html.escape(code, quote=False))
            i = j
        else:
            j = i + 1
            while j < n and lines[j].strip() and not re.match(r"#{1,6} |\|", lines[j]) \
                    and not (ITEM.match(lines[j]) and indent_of(lines[j]) < 4):
                j += 1
            out.append("<p>%s</p>" % inline(" ".join(l.strip() for l in lines[i:j]), links))
            i = j
    return "\n".join(out)


def render(text, links):
    """A Markdown text as HTML, and its headings as (level, text, id)."""
    headings = []
    return blocks(text.split("\n"), links, headings), headings
