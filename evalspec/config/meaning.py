"""Values that cannot be what the writer meant (docs/en/rule-self-tests.md): a red line that silently matches nothing is
the worst failure an evaluator can have, so these are config errors with the fix.

- a plain YAML scalar wrapped in “…”, ‘…’, 「…」, 『…』 or ＂…＂: the quotes become part of the text
  (a value inside YAML quotes, `'“VIP”'`, keeps its inner quotes: the writer asked for them);
- a pattern (or text) of only whitespace;
- a pattern that must not match and matches the empty string: it matches every reply.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from evalspec.config.interpolate import is_template
from evalspec.config.paths import LineMap, PathKey
from evalspec.config.yamlfile import typographic_quotes
from evalspec.extend.patterns import compile_pattern, written_patterns

if TYPE_CHECKING:
    from evalspec.extend.registry import AssertionType


def _single_quoted(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def quote_problem(text: str, key: str | None, what: str) -> str | None:
    """The message for a plain scalar `text` wrapped in typographic quotes, or None. `key` is the YAML key
    it was written under (None for a list item)."""
    pair = typographic_quotes(text)
    if pair is None:
        return None
    fixed = _single_quoted(text[1:-1])
    write = f"{key}: {fixed}" if key is not None else f"- {fixed}"
    return (f"{pair[0]}…{pair[1]} are not YAML quotes: the quotes are part of the {what}: write {write} "
            f"(to keep the quotes, put the whole value in YAML quotes: {_single_quoted(text)})")


def plain_quoted(lines: LineMap, under: PathKey) -> Iterator[PathKey]:
    """The paths at or under `under` holding a plain scalar wrapped in typographic quotes."""
    n = len(under)
    return (p for p in sorted(lines.plain_quoted, key=str) if p[:n] == under)


def _at(value: Any, sub: PathKey) -> Any:
    for part in sub:
        if isinstance(value, dict) and part in value or isinstance(value, list) and isinstance(part, int) \
                and part < len(value):
            value = value[part]  # type: ignore[index]
        else:
            return None
    return value


def value_quote_problems(name: str, value: Any, vpath: PathKey, patterns: set[PathKey],
                         lines: LineMap) -> list[tuple[PathKey, str]]:
    """Typographic quotes around an assertion's value or the texts inside it."""
    found = []
    for path in plain_quoted(lines, vpath):
        text = _at(value, path[len(vpath):])
        if not isinstance(text, str):
            continue
        last = path[-1] if len(path) > len(vpath) else name
        what = "pattern" if path in patterns else "text"
        if message := quote_problem(text, None if isinstance(last, int) else str(last), what):
            found.append((path, message))
    return found


def blank_problem(text: str, what: str) -> str | None:
    """A pattern or text of only whitespace (or empty), or None."""
    if text.strip() or is_template(text):
        return None
    shown = "empty" if not text else f"only whitespace ({text!r})"
    return f"the {what} is {shown}: it would match almost any reply; write the text it is meant to find"


def hollow_texts(atype: AssertionType, negate: bool, value: Any, path: PathKey) -> Iterator[tuple[PathKey, str]]:
    """The texts and patterns of a check's value that would match almost any reply (empty, only
    whitespace, or a must-not-match pattern matching the empty string), with their paths: a check's value as
    written, and again once its templates are rendered (an empty CSV cell in `contains: "{{ expected }}"`)."""
    patterns = written_patterns(atype, value, path)
    pattern_paths = {where for _, where in patterns}
    texts = list(patterns)
    if isinstance(value, str) and path not in pattern_paths:
        texts.append((value, path))
    elif isinstance(value, list):
        texts += [(v, (*path, i)) for i, v in enumerate(value) if isinstance(v, str)]
    must_not_match = negate or atype.name.startswith("not-")
    for text, where in texts:
        what = "pattern" if where in pattern_paths else "text"
        message: str | None = blank_problem(text, what)
        if message is None and what == "pattern" and must_not_match:
            message = empty_match_problem(text)
        if message:
            yield where, message


_PROBES = ("", "x", "您好，Hello 123\n")  # a pattern that matches the empty string in each of them matches anywhere


def empty_match_problem(pattern: str) -> str | None:
    """A must-not-match pattern that matches the empty string (it matches every reply), or None."""
    if is_template(pattern):
        return None
    try:  # anchored (`^(a)*$`) it matches only the texts it describes: a pattern that matches anywhere is meant
        compiled = compile_pattern(pattern)
        matches = all(compiled.search(probe, timeout=1.0) is not None for probe in _PROBES)
    except Exception:  # a bad pattern is reported by its own check
        return None
    if not matches:
        return None
    return (f"the pattern {pattern!r} matches the empty string, so it matches every reply and this rule "
            f"fails on all of them; make every part match at least one character (\\d+ rather than \\d*, "
            f"no empty alternative such as '||' or a '|' at either end)")


def stop_when_problem(key: str, text: str, path: PathKey, lines: LineMap) -> str | None:
    """A `stop_when` condition that cannot be meant: `assistant_matches` is a regex (a bad one, or one
    that matches the empty string, would end every conversation after its first reply), `user_says` a
    marker text."""
    from evalspec.extend.patterns import regex_problem

    what = "pattern" if key == "assistant_matches" else "text"
    if path in lines.plain_quoted and (message := quote_problem(text, key, what)):
        return message
    if message := blank_problem(text, what):
        return message
    if key != "assistant_matches":
        return None
    if message := regex_problem(text):
        return message
    if empty_match_problem(text):
        return (f"the pattern {text!r} matches the empty string, so it matches every reply and ends the "
                f"conversation after the first one; make every part match at least one character")
    return None
