"""Regexes written in suites: one owner for compiling, checking and matching them.

The `regex` module (Unicode-aware: `\\p{Han}`, full-width text), each pattern compiled once per
process, matched with a time-out that frees the GIL: a catastrophic pattern is an error naming it,
never a hung run. Load-time checks (`regex_problem`) and grading (`search`, `fullmatch`) share it.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
from collections.abc import Iterator
from typing import Any

import regex

from evalspec.core.errors import ControlFlow, GradingError
from evalspec.extend.registry import AssertionType

REGEX_TIMEOUT_S = 30.0  # options.grade_timeout's default; grading sets the suite's own
_regex_limit: contextvars.ContextVar[float] = contextvars.ContextVar("regex_limit", default=REGEX_TIMEOUT_S)
_on_loop: contextvars.ContextVar[list[str] | None] = contextvars.ContextVar("regex_on_loop", default=None)


class SlowMatch(ControlFlow):
    """A match that did not end within `HOLD_GIL_S` while checks ran on the event loop (`on_the_loop`)."""


@contextlib.contextmanager
def on_the_loop() -> Iterator[list[str]]:
    """Regexes matched inside this block may keep the thread `HOLD_GIL_S` at most: a longer match raises
    `SlowMatch` instead of waiting on its time limit, and its pattern is added to the list this yields,
    so the caller knows its check's result does not count (docs/en/scale-and-ray.md#throughput)."""
    slow: list[str] = []
    token = _on_loop.set(slow)
    try:
        yield slow
    finally:
        _on_loop.reset(token)


@contextlib.contextmanager
def regex_time_limit(seconds: float) -> Iterator[None]:
    """Regexes matched inside this block stop after `seconds` (a catastrophic pattern is an error)."""
    token = _regex_limit.set(seconds)
    try:
        yield
    finally:
        _regex_limit.reset(token)


def grade_time_limit() -> float:
    """The time limit of the check in progress (`options.grade_timeout`, set by grading; javascript
    checks give their node process this long)."""
    return _regex_limit.get()


@functools.lru_cache(maxsize=4096)
def compile_pattern(pattern: str, flags: int = 0) -> Any:
    """Compile with the `regex` module (once per pattern); raises regex.error."""
    return regex.compile(pattern, flags)


def regex_problem(pattern: str) -> str | None:
    """Why `pattern` is no valid regex, or None: the load-time check."""
    try:
        compile_pattern(pattern)
    except regex.error as exc:
        return f"bad regex {pattern!r}: {exc}"
    return None


HOLD_GIL_S = 0.001  # a match may keep the GIL this long; a longer one starts again with the GIL free
# (`regex` frees the GIL for every match of a str unless told not to: each short match then handed the GIL
# to a waiting thread, a python provider's, and waited to take it back)


def _match(how: str, pattern: str, text: str, flags: int) -> Any:
    limit = _regex_limit.get()
    try:
        match = getattr(compile_pattern(pattern, flags), how)
        slow = _on_loop.get()
        if limit > HOLD_GIL_S and slow is not None:
            try:
                return match(text, timeout=HOLD_GIL_S, concurrent=False)
            except TimeoutError:
                slow.append(pattern)
                raise SlowMatch(f"regex {pattern!r} needs more than {HOLD_GIL_S:g}s: checked off the loop") from None
        if limit > HOLD_GIL_S:  # nearly every match ends well within this: no hand-over of the GIL to wait for
            try:
                return match(text, timeout=HOLD_GIL_S, concurrent=False)
            except TimeoutError:
                pass
        return match(text, timeout=limit, concurrent=True)  # concurrent: frees the GIL
    except TimeoutError:
        raise GradingError(f"regex {pattern!r} timed out after {limit:g}s") from None
    except regex.error as exc:
        raise GradingError(f"bad regex {pattern!r}: {exc}") from None


def search(pattern: str, text: str, flags: int = 0) -> Any:
    """The first match of `pattern` in `text`, within the time limit; a bad or slow pattern is a GradingError."""
    return _match("search", pattern, text, flags)


def fullmatch(pattern: str, text: str, flags: int = 0) -> Any:
    """`text` matched as a whole by `pattern`, within the time limit."""
    return _match("fullmatch", pattern, text, flags)


def written_patterns(atype: AssertionType, value: Any, path: tuple[Any, ...]) -> list[tuple[str, tuple[Any, ...]]]:
    """The regexes an assertion's value holds (the keys its parameters type `Regex`), with their paths."""
    found: list[tuple[str, tuple[Any, ...]]] = []
    for key in atype.patterns:
        pattern, where = (value, path) if key == "" else (value.get(key), (*path, key)) if isinstance(value, dict) \
            else (None, path)
        if isinstance(pattern, str):
            found.append((pattern, where))
    return found
