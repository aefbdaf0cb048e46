# docs_highlight.py — syntax highlighting for the course's pages (make docs): C++,
# x86-64 and AArch64 assembly (GNU as, through the C preprocessor) and shell, each a
# list of token patterns. `lines(text, language)` gives one HTML string per source line,
# so that the page can number them; a token that spans lines is split at each line end.
import html
import re

CPP_KEYWORDS = """alignas alignof auto bool break case catch char class co_await co_return co_yield
    concept const consteval constexpr constinit continue decltype default delete do double else enum
    explicit extern false final float for friend if inline int long mutable namespace new noexcept
    nullptr operator override private protected public requires return short signed sizeof static
    static_assert static_cast reinterpret_cast const_cast dynamic_cast struct switch template this
    thread_local throw true try typename union unsigned using virtual void volatile while""".split()
SHELL_KEYWORDS = """if then else elif fi for in do done while until case esac function return
    local export set shift exit trap source""".split()

COMMON = [
    ("str", r'"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\''),
    ("num", r"\b(?:0[xX][0-9a-fA-F']+|\d[\d']*(?:\.\d+)?)[uUlLfF]*\b"),
]
LANGUAGES = {
    "cpp": [("com", r"//[^\n]*|/\*[\s\S]*?\*/"), ("pp", r"^[ \t]*#[ \t]*\w+")] + COMMON + [
        ("kw", r"\b(?:%s)\b" % "|".join(CPP_KEYWORDS)),
        ("type", r"\b(?:std|fib|u?int\d+_t|size_t|uintptr_t|[A-Z]\w*[a-z]\w*)\b"),
        ("fn", r"\b[a-z_]\w*(?=\()"),
    ],
    "asm": [("com", r"//[^\n]*|/\*[\s\S]*?\*/"), ("pp", r"^[ \t]*#[ \t]*\w+")] + [
        ("label", r"^[ \t]*[.\w]+:"),
        ("dir", r"(?<![\w%])\.[a-z_][\w]*"),
        ("reg", r"%[a-z0-9]+|\b(?:[xd](?:[12]?\d|30)|sp|fpcr)\b"),
        ("num", r"(?<![\w])\$?-?(?:0x[0-9a-fA-F]+|\d+)\b"),
        ("kw", r"(?<=^    )[a-z][a-z0-9]*\b"),
        ("str", r'"(?:\\.|[^"\\\n])*"'),
    ],
    "sh": [("com", r"(?<![\w$])#[^\n]*")] + COMMON + [
        ("kw", r"\b(?:%s)\b" % "|".join(SHELL_KEYWORDS)),
        ("var", r"\$\{[^}\n]*\}|\$\w+|\$[@#?*$!0-9]"),
    ],
}
PATTERNS = {name: re.compile("|".join("(?P<%s>%s)" % (kind, pattern) for kind, pattern in rules), re.M)
            for name, rules in LANGUAGES.items()}


def language_of(path):
    if path.endswith(".S"):
        return "asm"
    return "sh" if path.endswith(".sh") else "cpp"


def tokens(text, language):
    """(class, text) pieces that together are exactly `text`; class None is plain."""
    at = 0
    for match in PATTERNS[language].finditer(text):
        if match.start() > at:
            yield None, text[at:match.start()]
        yield match.lastgroup, match.group()
        at = match.end()
    if at < len(text):
        yield None, text[at:]


def lines(text, language):
    """One HTML string per line of `text` (which has no final newline)."""
    out = [[]]
    for kind, piece in tokens(text, language):
        for k, part in enumerate(piece.split("\n")):
            if k:
                out.append([])
            if part:
                escaped = html.escape(part, quote=False)
                out[-1].append('<span class="%s">%s</span>' % (kind, escaped) if kind else escaped)
    return ["".join(parts) for parts in out]
