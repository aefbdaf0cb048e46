# docs_symbols.py — the top-level symbols of a source file, for the course's pages
# (make docs): each gets an anchor on its first line, and a name in backticks in a README
# links to it. C++: classes, structs, enums, functions, aliases, variables and macros at
# namespace scope, and the member functions of those classes; assembly: global and local
# labels; shell: functions. Names are found by their line's shape, not by a parser.
import re

from lessons import segments

SKIP = {"if", "for", "while", "switch", "return", "sizeof", "static_assert", "decltype", "alignof",
        "alignas", "noexcept", "requires", "operator", "catch", "throw", "defined", "new", "delete"}
TYPE = re.compile(r"^\s*(?:template\s*<.*>\s*)?(?:class|struct|union|enum(?:\s+class)?)\s+"
                  r"(?:\[\[[^\]]*\]\]\s*)?(?:alignas\([^)]*\)\s*)?(\w+)\b(?!\s*;)")
MACRO = re.compile(r"^\s*#\s*define\s+(\w+)")
ALIAS = re.compile(r"^\s*using\s+(\w+)\s*=")
FUNCTION = re.compile(r"^[\w:<>,*&\s~\[\]]*?(~?[A-Za-z_][\w]*(?:::~?\w+)*)\s*\(")
VARIABLE = re.compile(r"^\s*(?:inline\s+|static\s+|constexpr\s+|const\s+|thread_local\s+|extern\s+)+"
                      r"[\w:<>,*&\s]*?\b(\w+)\s*(?:=|\{|;|\[)")
NAMESPACE = re.compile(r"\s*namespace\s+([\w:]*)")
EXTERN = re.compile(r'\s*extern\s+""')  # extern "C" {, its string blanked
LABEL = re.compile(r"^([.\w]+):")
SHELL_FUNCTION = re.compile(r"^(\w+)\(\)\s*\{")


def _stripped(text):
    """The code with comments and literals blanked, newlines kept."""
    return "".join(t if kind == "code" else
                   ("\n" * t.count("\n") if kind == "comment" else '""') for kind, t in segments(text))


def _cpp(text):
    """Brace depth decides: namespace and extern "C" braces do not count, so depth 0 is
    namespace scope and depth 1 inside a class there is its members."""
    found, stack, namespaces = [], [], []  # stack: (kind, name) of each open brace
    for number, line in enumerate(_stripped(text).split("\n"), 1):
        scope = TYPE.match(line) or NAMESPACE.match(line)
        kind = "class" if TYPE.match(line) else "namespace" if scope or EXTERN.match(line) else "block"
        depth = sum(1 for k, _ in stack if k != "namespace")
        prefix = "::".join(n for n in "::".join(namespaces).split("::") if n not in ("fib", ""))
        if depth == 0 and line[:1] not in (" ", "\t", "}", ""):
            for pattern in (TYPE, MACRO, ALIAS, FUNCTION, VARIABLE):
                match = pattern.match(line)
                if match and match.group(1).split("::")[-1].lstrip("~") not in SKIP:
                    found.append((number, match.group(1)))
                    if prefix and "::" not in match.group(1):
                        found.append((number, prefix + "::" + match.group(1)))
                    break
        elif depth == 1 and stack[-1][0] == "class" and (match := FUNCTION.match(line) or TYPE.match(line)):
            if match.group(1) not in SKIP and "::" not in match.group(1):
                found.append((number, stack[-1][1] + "::" + match.group(1)))
        for char in line:
            if char == "{":
                stack.append((kind, scope.group(1) if scope else ""))
                if kind == "namespace":
                    namespaces.append(stack[-1][1])
                kind, scope = "block", None  # a second brace on the line is a plain block
            elif char == "}" and stack:
                if stack.pop()[0] == "namespace":
                    namespaces.pop()
    return found


def symbols(path, text):
    """[(line number, name)] for the file's symbols, in the order they appear."""
    if path.endswith(".S"):
        return [(n, m.group(1)) for n, line in enumerate(text.split("\n"), 1) if (m := LABEL.match(line))]
    if path.endswith(".sh"):
        return [(n, m.group(1)) for n, line in enumerate(text.split("\n"), 1) if (m := SHELL_FUNCTION.match(line))]
    return _cpp(text)
