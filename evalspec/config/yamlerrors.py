"""The YAML parser's syntax errors in plain words: which line, what YAML understood, what to write instead.

Most syntax errors in a suite are indentation: a key one space off, a list item not lined up with the
others, a key indented deeper than its siblings (read as part of the value above). The parser says
"did not find expected key" or "did not find expected '-' indicator"; this module says which lines
disagree and how many spaces would make them agree. Errors it does not recognise keep the parser's
words, with "invalid YAML:" in front.
"""

from __future__ import annotations

import re
from typing import Any

_KEY = re.compile(r"^(-\s+)*([^\s:#'\"][^:#]*?):(\s|$)")


def plain_yaml_error(exc: Any, text: str) -> tuple[int | None, str]:
    """(1-based line, message) for a `yaml.MarkedYAMLError` raised while parsing `text`."""
    mark = exc.problem_mark or exc.context_mark
    line = mark.line + 1 if mark else None
    lines = text.split("\n")
    problem, context = str(exc.problem or ""), str(exc.context or "")
    start = exc.context_mark.line + 1 if exc.context_mark is not None else None
    plain = None
    if mark is not None and 0 <= mark.line < len(lines):
        here = lines[mark.line]
        if "cannot start any token" in problem and here[mark.column:mark.column + 1] == "\t":
            plain = "a tab indents this line: YAML indents with spaces only — replace the tab with spaces"
        elif problem == "did not find expected key" and "block mapping" in context and start:
            plain = _not_a_key(lines, mark.line, start - 1)
        elif problem == "did not find expected '-' indicator" and start:
            plain = _not_an_item(lines, mark.line, start - 1)
        elif problem.startswith("mapping values are not allowed"):
            plain = _colon(lines, mark.line, mark.column)
        elif problem in ("did not find expected ',' or '}'", "did not find expected ',' or ']'") and start:
            close = problem[-2]
            plain = (f"the {'{' if close == '}' else '['}…{close} that starts at line {start} is not closed where "
                     f"YAML expects: separate its entries with ', ' (an ASCII comma and a space) and end it with "
                     f"'{close}'; quote a text that contains ',', ':' or brackets")
        elif problem == "found unexpected end of stream" and "quoted scalar" in context and start:
            plain = (f"the quote that opens the text at line {start} is never closed: end the text with the same "
                     f"quote mark it starts with")
        elif problem == "did not find expected node content" and "flow" in context and (opened := _unclosed(lines, mark.line)):
            plain = f"the '{opened[1]}' at line {opened[0]} is never closed: end it with '{']' if opened[1] == '[' else '}'}'"
    if plain is not None:
        return line, plain
    msg = problem or context
    if exc.context and exc.context_mark and exc.problem:
        msg += f" ({exc.context} started at line {start})"
    return line, f"invalid YAML: {msg}"


def _unclosed(lines: list[str], upto: int) -> tuple[int, str] | None:
    """(1-based line, bracket) of the innermost '[' or '{' still open at line `upto` (comments and quoted
    text skipped)."""
    stack: list[tuple[int, str]] = []
    for number, line in enumerate(lines[: upto + 1], 1):
        quote = ""
        for i, ch in enumerate(line):
            if quote:
                quote = "" if ch == quote else quote
            elif ch in "'\"" and (i == 0 or line[i - 1] in " \t[{,:"):
                quote = ch
            elif ch == "#" and (i == 0 or line[i - 1] in " \t"):
                break
            elif ch in "[{":
                stack.append((number, ch))
            elif ch in "]}" and stack:
                stack.pop()
    return stack[-1] if stack else None


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _spaces(n: int) -> str:
    return f"{n} space{'s' if n != 1 else ''}" if n else "no indentation"


def _shown(line: str) -> str:
    text = line.strip()
    return text if len(text) <= 40 else text[:39] + "…"


def _item_keys(line: str) -> int:
    """The column of the first key of a list item line (`  - user: hi` -> 4)."""
    stripped = line.lstrip(" ")
    at = _indent(line)
    while stripped.startswith("-") and stripped[1:2] in (" ", ""):
        rest = stripped[1:].lstrip(" ")
        at += len(stripped) - len(rest)
        stripped = rest
    return at


def _not_a_key(lines: list[str], bad: int, start: int) -> str:
    """A line that cannot continue the block mapping starting on line `start` (0-based)."""
    here, keys = lines[bad], _item_keys(lines[start]) if lines[start].lstrip().startswith("- ") else _indent(lines[start])
    at = _indent(here)
    if here.lstrip().startswith("- "):
        above = next((i for i in range(bad - 1, start - 1, -1)
                      if lines[i].lstrip().startswith("- ") and _indent(lines[i]) != at), None)
        if above is not None:
            return (f"the list item '{_shown(here)}' is indented {_spaces(at)}, but the item above it (line "
                    f"{above + 1}, '{_shown(lines[above])}') starts at {_spaces(_indent(lines[above]))}: "
                    f"line its '- ' up with that item ({_spaces(_indent(lines[above]))})")
        return (f"the list item '{_shown(here)}' stands where a key of the mapping at line {start + 1} goes: "
                f"write the key on its own line ('KEY:') and indent the items under it")
    return (f"'{_shown(here)}' is indented {_spaces(at)}, but the keys of the mapping that starts at line "
            f"{start + 1} ('{_shown(lines[start])}') are at {_spaces(keys)}: write it with {_spaces(keys)}")


def _not_an_item(lines: list[str], bad: int, start: int) -> str:
    """A line inside the block list starting on line `start` (0-based) that is not one of its items."""
    here, dash = lines[bad], _indent(lines[start])
    keys, at = _item_keys(lines[start]), _indent(lines[bad])
    if here.lstrip().startswith("- "):
        return (f"the list item '{_shown(here)}' is indented {_spaces(at)}, but the items of the list that "
                f"starts at line {start + 1} have their '- ' at {_spaces(dash)}: line it up with them")
    return (f"'{_shown(here)}' is indented {_spaces(at)}, inside the list that starts at line {start + 1} "
            f"('{_shown(lines[start])}'), whose items have their keys at {_spaces(keys)}: indent it "
            f"{_spaces(keys)} to add it to the item above, or write '- {here.strip()}' with its '- ' at "
            f"{_spaces(dash)} to start a new item")


def _key_on_the_line(here: str, first_colon: int, column: int, name: str) -> str | None:
    """`- user: 凌云多少钱？ label: price`: a key of the turn typed on the question's line."""
    from evalspec.config.hints import all_keys

    inner = re.search(r"(?:^|\s)([A-Za-z_][A-Za-z0-9_-]*)\s*$", here[first_colon + 1:column])
    if inner is None or inner.group(1) not in all_keys():
        return None
    other = inner.group(1)
    text = here[first_colon + 1:first_colon + 1 + inner.start(1)].strip()
    value = here[column + 1:].strip()
    return (f"'{other}: {value}' is written on the line of '{name}:', so YAML reads it as part of that text: put "
            f"'{other}:' on a line of its own, lined up with '{name}:' — {name}: {text}, then {other}: {value} "
            f"on the next line")


def _colon(lines: list[str], bad: int, column: int) -> str:
    """A ':' where YAML takes no key: a key indented deeper than its siblings, or ': ' inside a text."""
    here = lines[bad]
    key = _KEY.match(here.lstrip(" "))
    first_colon = _indent(here) + key.end(2) if key else -1
    if column > first_colon >= 0:
        name, value = key.group(2), here[first_colon + 1:].strip()  # type: ignore[union-attr]
        if written := _key_on_the_line(here, first_colon, column, name):
            return written
        quoted = "'" + value.replace("'", "''") + "'"
        return (f"the text after '{name}:' contains ': ', which YAML reads as another key: quote the text — "
                f"{name}: {quoted}")
    above = next((i for i in range(bad - 1, -1, -1) if lines[i].strip() and not lines[i].lstrip().startswith("#")),
                 None)
    if above is None:
        return "a ':' where YAML does not expect a key: quote the text if the ':' is part of it"
    siblings = _item_keys(lines[above])
    beside = _KEY.match(lines[above].lstrip(" "))
    name = f"'{beside.group(2)}'" if beside else "the line above"
    return (f"'{_shown(here)}' is indented {_spaces(_indent(here))}, deeper than the line above (line {above + 1}, "
            f"'{_shown(lines[above])}'), so YAML reads it as part of that value: indent it {_spaces(siblings)} to "
            f"make it a key beside {name}")
