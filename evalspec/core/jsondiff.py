"""Where two JSON values differ, named by JMESPath-style paths (`visits[1].date`): what `world-matches`
gives as its evidence and what reports show of a world (docs/en/world.md).

A list that gained or lost elements is named by its own path (`visits`), not element by element: a
booking added in the middle would otherwise make every later element differ.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import regex

__all__ = ["Difference", "differences", "join", "same"]

IDENTIFIER = regex.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def same(a: Any, b: Any) -> bool:
    """JSON equality, as JMESPath compares: true is not 1 (Python's `==` says it is), 1 is 1.0."""
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


@dataclass(frozen=True)
class Difference:
    """One place where `before` and `after` differ: `had`/`has` say whether the key was there at all."""

    path: str
    before: Any
    after: Any
    had: bool = True
    has: bool = True


def join(path: str, key: Any) -> str:
    """`visits` + 1 -> `visits[1]`; `a` + `b` -> `a.b`; a key that is no identifier is quoted (JMESPath)."""
    if isinstance(key, int):
        return f"{path}[{key}]"
    name = key if IDENTIFIER.fullmatch(str(key)) else '"' + str(key).replace("\\", "\\\\").replace('"', '\\"') + '"'
    return f"{path}.{name}" if path else name


def differences(before: Any, after: Any, path: str = "") -> Iterator[Difference]:
    """Every place where `after` differs from `before`, in key order (the whole value is `@`)."""
    if isinstance(before, dict) and isinstance(after, dict):
        for key in [*before, *(k for k in after if k not in before)]:
            at = join(path, key)
            if key not in after:
                yield Difference(at, before[key], None, has=False)
            elif key not in before:
                yield Difference(at, None, after[key], had=False)
            else:
                yield from differences(before[key], after[key], at)
    elif isinstance(before, list) and isinstance(after, list) and len(before) == len(after):
        for i, (x, y) in enumerate(zip(before, after, strict=True)):
            yield from differences(x, y, join(path, i))
    elif not same(before, after):
        yield Difference(path or "@", before, after)
