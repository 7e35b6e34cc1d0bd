"""Adding list items to a suite as text (`import transcripts` into an existing suite, the review app's
"make a test"): everything the suite holds — comments, layout, quoting — stays as written.

Two YAML forms decide where the items may go: a document end (`...`, or `---` opening another document)
after which nothing belongs to the suite, and a block scalar that keeps its trailing lines (`|+`, `>+`),
whose blank lines at the end of the list are part of its value. Whatever is appended, the suite is read
again and must hold what it held before plus the new items; otherwise nothing is written
(docs/en/importers.md#appending-to-a-suite).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import yaml

from evalspec.core.errors import ConfigError, Problem

_TOP_KEY = re.compile(r"^[A-Za-z_][\w-]*\s*:")
_DOCUMENT_MARK = re.compile(r"^(?:\.\.\.|---)(?:\s|$)")
# a line ending in a block scalar's header: `key: |+`, `- |2+`, `key: !!str >+  # note`
_BLOCK_HEADER = re.compile(r"(?:^|[:\-])\s+(?:[!&]\S*\s+)*[|>]([1-9+\-]{0,2})\s*(?:#.*)?$")


def first_document(text: str) -> Any:
    """The suite's data: the first YAML document of `text` (None when it has none); the whole text is read,
    so that what follows the document must be YAML too."""
    return next(iter(list(yaml.safe_load_all(text))), None)


def _document_end(lines: list[str]) -> int:
    """The index of the line that ends the suite's document (`...`, or a `---` after its content), else len."""
    started = False
    for i, line in enumerate(lines):
        if started and _DOCUMENT_MARK.match(line):
            return i
        if line.strip() and not line.startswith(("#", "%", "---")):
            started = True
    return len(lines)


def _ends_in_kept_lines(lines: list[str], start: int, end: int) -> bool:
    """Whether the last content of lines[start:end] is a block scalar that keeps its trailing lines (`|+`),
    so that the blank lines after it are part of its value."""
    block: tuple[int, bool] | None = None  # (header indent, keeps its trailing lines) of the open block scalar
    for line in lines[start:end]:
        if not line.strip():
            continue
        indent = len(line) - len(line.lstrip(" "))
        if block is not None and indent > block[0]:
            continue  # the block scalar's content
        if line.lstrip().startswith("#"):
            continue  # a comment ends the block scalar, whose trailing lines are still its own
        block = None
        header = _BLOCK_HEADER.search(line)
        if header is not None:
            block = (indent, "+" in header.group(1))
    return block is not None and block[1]


def _insertion_point(lines: list[str], start: int, end: int) -> int:
    """Where new items go in the list lines[start:end]: before its trailing blank lines (and, before another
    key, the comments that introduce it), except the blank lines that belong to a `|+` value."""
    kept = _ends_in_kept_lines(lines, start, end)
    point = end
    while point > start + 1 and (not lines[point - 1].strip() or (end < len(lines) and lines[point - 1].startswith("#"))):
        point -= 1
        if kept and lines[point].startswith("#"):
            end = point  # the last comment seen: the blank lines before it are the `|+` value's
    return end if kept else point


def _inline_list(lines: list[str], start: int, key: str, name: str) -> None:
    """`key: []` (or `~`, null) becomes `key:` for a block list; any other inline value is refused."""
    inline = lines[start].split(":", 1)[1].split(" #", 1)[0].strip()
    if inline in ("[]", "~", "null"):
        lines[start] = lines[start].replace(" " + inline, "", 1).replace(inline, "", 1).rstrip()
    elif inline:
        raise ConfigError([Problem(name, start + 1, key, f"the {key} are written inline ({key}: [...]); write "
                                   f"them as a block list (one '- ' item each) to append to them")])


def append_items(text: str, key: str, items: Callable[[str], str], name: str = "") -> str:
    """`text` (a suite) with list items added at the end of its top-level `key:` list, or a new `key:` list
    at the end of its document; untouched otherwise. `items(indent)` gives the items' YAML, each line
    starting with `indent`. Raises ConfigError (nothing to write) when the suite would read otherwise."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()  # the last line's end
    doc_end = _document_end(lines)
    body, tail = lines[:doc_end], lines[doc_end:]
    start = next((i for i, line in enumerate(body) if re.match(rf"^{re.escape(key)}\s*:", line)), None)
    if start is None:
        new = [*body, f"{key}:", *items("  ").rstrip("\n").split("\n")]
    else:
        _inline_list(body, start, key, name)
        indent = next((m.group(1) for line in body[start + 1:] if (m := re.match(r"^(\s*)- ", line))), "  ")
        end = next((i for i in range(start + 1, len(body)) if _TOP_KEY.match(body[i])), len(body))
        end = _insertion_point(body, start, end)
        new = [*body[:end], *items(indent).rstrip("\n").split("\n"), *body[end:]]
    out = "\n".join([*new, *tail]) + "\n"
    _check_kept(text, out, key, name)
    return out


def _check_kept(before: str, after: str, key: str, name: str) -> None:
    """The appended suite must read as the suite did, its `key` list followed by the new items."""
    def refused(why: str) -> ConfigError:
        return ConfigError([Problem(name, None, key, f"appending to this suite would {why}; nothing was written "
                                    "(write the new tests to another suite and move them by hand)")])

    try:
        old, new = first_document(before), first_document(after)
    except yaml.YAMLError as exc:
        raise refused(f"make it unreadable ({' '.join(str(exc).split())})") from None
    old = old if isinstance(old, dict) else {}
    if not isinstance(new, dict) or not isinstance(new.get(key), list):
        raise refused(f"not leave a '{key}:' list")
    kept = old.get(key) or []
    changed = [k for k in old if k != key and new.get(k) != old[k]] + [k for k in new if k not in old and k != key]
    if new[key][:len(kept)] != kept:
        changed.insert(0, key)
    if changed:
        raise refused(f"change what it holds ({', '.join(map(str, changed))})")
