"""YAML mistakes people make when they are not programmers, named with their line and their fix.

Before parsing, two mistakes that would stop YAML with parser jargon ("could not find expected ':'",
"found unknown escape character") are found, reported and mended in a copy of the text, so the rest
of the file is still checked in the same round:
- a full-width colon after a key (`label：问配置`, typed with a Chinese input method);
- a `\\d`-style regex escape inside double quotes (`"1[3-9]\\d{9}"`), which YAML reads as its own escape.
- a full-width comma or colon between the entries of a `{...}` flow mapping (`{name: 张三，city: 北京}`);
- full-width spaces '　' in the indentation (YAML reads them as part of the key);
- a known key with no space after its colon (`user:你好`, which YAML reads as one text);
- an unquoted `{{ var }}` at the start of a value (YAML reads `{` as the start of a mapping);
Line numbers are kept. (A full-width comma inside `[...]` parses, as one item: `yamlfile` reports it.)
"""

from __future__ import annotations

import re

from evalspec.core.errors import Problem

_FULLWIDTH_KEY = re.compile(r"^(\s*(?:-\s+)*)([A-Za-z_][A-Za-z0-9_.:-]*?)[ \t]*：[ \t]*")
_DOUBLE_QUOTED = re.compile(r'"((?:[^"\\]|\\.)*)"')
_YAML_ESCAPES = set('0abtnvfre "/\\N_LPxuU\t')
_BAD_ESCAPE = re.compile(r"\\(.)")
# after a full-width comma inside {...}: the next entry's key and its colon (YAML would fail on it)
_NEXT_KEY = re.compile(r"[ \t]*([^\s,{}\[\]:：，'\"#]+)[ \t]*[:：](?=[ \t]|$|[}\]])")
_FLOW_KEY = re.compile(r"[ \t]*([A-Za-z_][A-Za-z0-9_.-]*)[ \t]*：")
_INDENT = re.compile(r"^[ \u3000]*")
_NO_SPACE = re.compile(r"^(\s*(?:-\s+)*)([A-Za-z_][A-Za-z0-9_-]*):(?=[^\s:/])")
_TEMPLATE_START = re.compile(r"^(\s*(?:-\s+)*(?:([A-Za-z_][A-Za-z0-9_-]*):[ \t]+)?)(\{\{.*?)(\s+#.*)?$")


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
        line = _mend_indent(line, number, file, problems)
        line = _mend_colon(line, number, file, problems)
        line = _mend_missing_space(line, number, file, problems)
        line = _mend_template_start(line, number, file, problems)
        line = _mend_escapes(line, number, file, problems)
        line = _mend_flow_mapping(line, number, file, problems)
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


def _mend_indent(line: str, number: int, file: str, problems: list[Problem]) -> str:
    """Full-width spaces in the indentation, typed with a Chinese input method: each is two columns wide."""
    lead = _INDENT.match(line).group(0)  # type: ignore[union-attr]
    if "\u3000" not in lead or not line[len(lead):]:
        return line
    spaces = lead.replace("\u3000", "  ")
    problems.append(Problem(file, number, "", f"full-width spaces '　' in the indentation of '{line.strip()[:40]}': "
                                              f"YAML indents with ASCII spaces only — replace them with spaces "
                                              f"({len(spaces)} spaces line it up as it looks)"))
    return spaces + line[len(lead):]


def _known_key(key: str) -> bool:
    from evalspec.config.hints import all_keys
    from evalspec.extend.registry import resolve_type

    return key in all_keys() or resolve_type(key) is not None


def _mend_missing_space(line: str, number: int, file: str, problems: list[Problem]) -> str:
    """`user:你好` is one text to YAML, not the key `user`: a known key without a space after its colon."""
    match = _NO_SPACE.match(line)
    if not match or line.lstrip().startswith("#") or not _known_key(match.group(2)):
        return line
    key, rest = match.group(2), line[match.end():]
    problems.append(Problem(file, number, "", f"no space after '{key}:': YAML reads '{key}:{rest.strip()}' as one text "
                                              f"— write a space after the colon: '{key}: {rest.strip()}'"))
    return f"{line[:match.end()]} {rest}"


def _mend_template_start(line: str, number: int, file: str, problems: list[Problem]) -> str:
    """`user: {{ model }}多少钱？`: YAML reads the `{` as a mapping; quoted, the template renders as meant."""
    match = _TEMPLATE_START.match(line)
    if not match or line.lstrip().startswith("#"):
        return line
    lead, key, value = match.group(1), match.group(2), match.group(3).rstrip()
    quoted = "'" + value.replace("'", "''") + "'"
    written = f"{key}: {quoted}" if key else f"- {quoted}"
    problems.append(Problem(file, number, "", f"'{value[:40]}' starts with '{{{{', which YAML reads as the start of a "
                                              f"mapping: quote it — {written}"))
    return lead + quoted + (match.group(4) or "")


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


def _mend_flow_mapping(line: str, number: int, file: str, problems: list[Problem]) -> str:
    """`{name: 张三，city: 北京}` -> `{name: 张三, city: 北京}`; `{name：张三}` -> `{name: 张三}` (outside quotes)."""
    if "{" not in line or ("，" not in line and "：" not in line):
        return line
    out: list[str] = []
    stack: list[str] = []
    found: list[str] = []
    quote, i = "", 0
    while i < len(line):
        ch = line[i]
        i += 1
        in_mapping = bool(stack) and stack[-1] == "{"
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and (i == 1 or line[i - 2] in " \t"):
            out.append(line[i - 1:])
            break
        elif ch in "{[":
            stack.append(ch)
        elif ch in "}]" and stack:
            stack.pop()
        elif ch == "，" and in_mapping and _NEXT_KEY.match(line, i):
            found.append("comma '，'")
            ch = ","
        out.append(ch)
        if not quote and ch in "{," and stack and stack[-1] == "{" and (key := _FLOW_KEY.match(line, i)):
            found.append("colon '：'")
            out.append((" " if ch == "," else "") + key.group(1) + ": ")
            i = key.end()
            while i < len(line) and line[i] in " \t":
                i += 1
        elif ch == "," and found and i < len(line) and line[i] not in " \t":
            out.append(" ")
    if not found:
        return line
    fixed = "".join(out)
    what = " and ".join(dict.fromkeys(f"a full-width {f}" for f in found))
    problems.append(Problem(file, number, "", f"{what} inside {{…}}: YAML needs an ASCII comma between entries and "
                                              f"an ASCII colon and a space after each key — write '{fixed.strip()}'"))
    return fixed
