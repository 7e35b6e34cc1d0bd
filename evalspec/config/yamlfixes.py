"""YAML mistakes people make when they are not programmers, named with their line and their fix.

Before parsing, two mistakes that would stop YAML with parser jargon ("could not find expected ':'",
"found unknown escape character") are found, reported and mended in a copy of the text, so the rest
of the file is still checked in the same round:
- a full-width colon after a key (`label：问配置`, typed with a Chinese input method);
- a `\\d`-style regex escape inside double quotes (`"1[3-9]\\d{9}"`), which YAML reads as its own escape.
Line numbers are kept. (A full-width comma inside `[...]` parses, as one item: `yamlfile` reports it.)
"""

from __future__ import annotations

import re

from evalspec.errors import Problem

_FULLWIDTH_KEY = re.compile(r"^(\s*(?:-\s+)*)([A-Za-z_][A-Za-z0-9_.:-]*?)[ \t]*：[ \t]*")
_DOUBLE_QUOTED = re.compile(r'"((?:[^"\\]|\\.)*)"')
_YAML_ESCAPES = set('0abtnvfre "/\\N_LPxuU\t')
_BAD_ESCAPE = re.compile(r"\\(.)")


def mend(text: str, file: str) -> tuple[str, list[Problem]]:
    """(the text with these mistakes mended, one problem per mistake)."""
    problems: list[Problem] = []
    out: list[str] = []
    block_indent: int | None = None  # inside a `|` / `>` block scalar nothing is YAML syntax
    for number, line in enumerate(text.split("\n"), 1):
        indent = len(line) - len(line.lstrip(" "))
        if block_indent is not None:
            if not line.strip() or indent > block_indent:
                out.append(line)
                continue
            block_indent = None
        if re.search(r":\s*[|>][-+0-9]*\s*(#.*)?$", line):
            block_indent = indent
        line = _mend_colon(line, number, file, problems)
        line = _mend_escapes(line, number, file, problems)
        out.append(line)
    return "\n".join(out), problems


def _mend_colon(line: str, number: int, file: str, problems: list[Problem]) -> str:
    match = _FULLWIDTH_KEY.match(line)
    if not match or ":" in line[: match.start(2)] or line.lstrip().startswith("#"):
        return line
    lead, key = match.group(1), match.group(2)
    if ": " in key or key.endswith(":"):
        return line
    rest = line[match.end():]
    problems.append(Problem(file, number, "", f"full-width colon '：' after '{key}': YAML needs an ASCII colon "
                                              f"and a space — write '{key}: {rest.strip()}'"))
    return f"{lead}{key}: {rest}"


def _mend_escapes(line: str, number: int, file: str, problems: list[Problem]) -> str:
    if "\\" not in line or '"' not in line:
        return line
    comment = re.search(r"(^|\s)#", line)

    def fix(match: re.Match[str]) -> str:
        if comment and match.start() > comment.start():
            return match.group(0)
        inner = match.group(1)
        bad = [m.group(1) for m in _BAD_ESCAPE.finditer(inner) if m.group(1) not in _YAML_ESCAPES]
        if not bad:
            return match.group(0)
        single = "'" + inner.replace("'", "''") + "'"
        problems.append(Problem(file, number, "", f"'\\{bad[0]}' inside double quotes is read by YAML, not by the "
                                                  f"regex: use single quotes — {single}"))
        return single

    return _DOUBLE_QUOTED.sub(fix, line)
