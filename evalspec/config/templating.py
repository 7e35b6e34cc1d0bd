"""The jinja2 sandbox that renders `{{ var }}` templates, with a time and a size limit (docs/en/reports-and-gate.md#errors-and-failures).

A template is data from a suite file, so it must not be able to hang or exhaust the process:
`'x' * 10**11`, `10 ** 10 ** 10`, `'x'.center(10**11)` and nested `range(100000)` loops are refused
with a TemplateError instead of being computed. Limits are checked where the work happens: before
an operator or call that would build a large value, at every loop step, and at every output chunk.
"""

from __future__ import annotations

import math
import re
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

from jinja2 import StrictUndefined, nodes
from jinja2.exceptions import SecurityError
from jinja2.runtime import Context
from jinja2.sandbox import SandboxedEnvironment
from jinja2.visitor import NodeTransformer

from evalspec.core.errors import ControlFlow

#: characters one rendered template may have
MAX_OUTPUT_CHARS = 1_000_000
#: seconds one template may take to render
MAX_RENDER_SECONDS = 2.0
#: loop steps one render may take (nested loops multiply)
MAX_LOOP_STEPS = 1_000_000
# calls whose integer arguments are sizes of the value they build
_SIZED_METHODS = {"center", "ljust", "rjust", "zfill", "expandtabs"}
_SIZED_FILTERS = ("center", "indent", "wordwrap", "truncate", "batch", "slice")
_BIG_FORMAT_WIDTH = re.compile(r"\d{7,}")


class TemplateLimit(ControlFlow, SecurityError):
    """A template would exceed its time or size limit."""


class _Budget(threading.local):
    deadline: float = math.inf
    steps: int = 0


_budget = _Budget()


def _check_time() -> None:
    if time.monotonic() > _budget.deadline:
        raise TemplateLimit(f"took longer than {MAX_RENDER_SECONDS:g} s to render (the time limit)")


def _check_size(size: float, what: str) -> None:
    if size > MAX_OUTPUT_CHARS:
        raise TemplateLimit(f"{what} would be {size:,.0f} long; the limit is {MAX_OUTPUT_CHARS:,} "
                            f"characters per template")


def _loop_budget(items: Any) -> Iterator[Any]:
    """Every `{% for %}` iterates through this: steps are counted across the whole render."""
    for item in items:
        _budget.steps += 1
        if _budget.steps > MAX_LOOP_STEPS:
            raise TemplateLimit(f"loops ran more than {MAX_LOOP_STEPS:,} steps (the limit; nested loops?)")
        if _budget.steps % 256 == 0:
            _check_time()
        yield item


def _size_guard(value: Any) -> Any:
    """Every `~` result passes through this (a loop that doubles a string stops at the limit)."""
    _check_size(len(value) if isinstance(value, str) else 0, "a joined text")
    return value


class _Guard(NodeTransformer):
    """Rewrites a parsed template so loops and `~` joins report to the budget."""

    def visit_For(self, node: nodes.For) -> nodes.Node:
        self.generic_visit(node)
        node.iter = nodes.Filter(node.iter, _LOOP_FILTER, [], [], None, None, lineno=node.lineno)
        return node

    def visit_Concat(self, node: nodes.Concat) -> nodes.Node:
        self.generic_visit(node)
        return nodes.Filter(node, _SIZE_FILTER, [], [], None, None, lineno=node.lineno)


_LOOP_FILTER, _SIZE_FILTER = "evalspec_loop_budget", "evalspec_size_guard"


def _sized_filter(fn: Callable[..., Any]) -> Callable[..., Any]:
    def checked(value: Any, *args: Any, **kwargs: Any) -> Any:
        for arg in (*args, *kwargs.values()):
            if isinstance(arg, int):
                _check_size(arg, f"'{getattr(fn, '__name__', 'filter')}' with {arg}")
        return fn(value, *args, **kwargs)

    for attr in ("jinja_pass_arg",):
        if hasattr(fn, attr):
            setattr(checked, attr, getattr(fn, attr))
    return checked


class LimitedEnvironment(SandboxedEnvironment):
    """SandboxedEnvironment whose `*`, `**`, sized calls and loops stay under the limits above."""

    intercepted_binops = frozenset({"*", "**", "+", "%"})

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.filters[_LOOP_FILTER] = _loop_budget
        self.filters[_SIZE_FILTER] = _size_guard
        for name in _SIZED_FILTERS:
            if name in self.filters:
                self.filters[name] = _sized_filter(self.filters[name])

    def call_binop(self, context: Context, op: str, left: Any, right: Any) -> Any:
        _check_time()
        if op == "*":
            for seq, n in ((left, right), (right, left)):
                if isinstance(seq, (str, list, tuple)) and isinstance(n, int):
                    _check_size(len(seq) * n, "a repeated value")
        elif op == "**" and isinstance(left, int) and isinstance(right, int) and abs(left) > 1 and right > 0:
            _check_size(right * math.log10(abs(left)), "a power (in digits)")
        elif op == "+" and isinstance(left, (str, list, tuple)) and isinstance(right, (str, list, tuple)):
            _check_size(len(left) + len(right), "a joined value")
        elif op == "%" and isinstance(left, str) and _BIG_FORMAT_WIDTH.search(left):
            raise TemplateLimit("a format width of a million characters or more")
        return self.binop_table[op](left, right)

    def _parse(self, source: str, name: str | None, filename: str | None) -> nodes.Template:
        template = super()._parse(source, name, filename)
        guarded: nodes.Template = _Guard().visit(template)
        return guarded

    def call(__self, __context: Context, __obj: Any, *args: Any, **kwargs: Any) -> Any:  # noqa: N805
        _check_time()
        name = getattr(__obj, "__name__", "")
        owner = getattr(getattr(__obj, "__wrapped__", __obj), "__self__", None)  # str.format is wrapped
        if isinstance(owner, str):
            if name in _SIZED_METHODS:
                for arg in (*args, *kwargs.values()):
                    if isinstance(arg, int):
                        _check_size(arg, f"str.{name}({arg})")
            elif name in ("format", "format_map") and _BIG_FORMAT_WIDTH.search(owner):
                raise TemplateLimit("a format width of a million characters or more")
            elif name == "replace" and len(args) >= 2 and isinstance(args[1], str):
                _check_size(len(owner) * max(1, len(args[1])), "str.replace")
        return super().call(__context, __obj, *args, **kwargs)


ENVIRONMENT = LimitedEnvironment(undefined=StrictUndefined, autoescape=False, keep_trailing_newline=True)


def render_limited(template: Any, variables: dict[str, Any]) -> str:
    """Render a compiled template chunk by chunk, stopping at the time or size limit."""
    outer = _budget.deadline, _budget.steps
    _budget.deadline = min(outer[0], time.monotonic() + MAX_RENDER_SECONDS)
    _budget.steps = 0
    try:
        parts: list[str] = []
        size = 0
        for chunk in template.generate(**variables):
            size += len(chunk)
            _check_size(size, "the rendered text")
            _check_time()
            parts.append(chunk)
        return "".join(parts)
    finally:
        _budget.deadline, _budget.steps = outer
