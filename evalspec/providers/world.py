"""Answering a call of one of the suite's `tools:` against the conversation's world (docs/en/world.md#the-world-and-the-tools).

`python: FILE.py:fn` is called as fn(args, world) off the event loop, under the call time-out: its
return value is the result (sent as JSON) and it may change `world`, the conversation's own deep copy.
A handler that raises (or overruns) answers `{"error": "<its message>"}` to the agent and the
conversation goes on; the call is marked errored (`said-vs-did` does not count it as done). `returns:`
is a value or a template over `args`, as a provider's `tool_results`.
"""

from __future__ import annotations

import asyncio
import inspect
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalspec.config.interpolate import render_value
from evalspec.config.model import ToolSpec
from evalspec.core.errors import LoadError, ProviderError, TemplateProblem, UserCodeError
from evalspec.core.pyref import load_callable
from evalspec.core.usercode import call_user


@dataclass(frozen=True)
class ToolAnswer:
    """What the agent receives for one call (`content`), and the handler's error when it raised."""

    content: str
    error: str | None = None


def as_json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def _message(exc: BaseException) -> str:
    return str(exc) or type(exc).__name__


def _guarded(fn: Callable[..., Any]) -> Callable[..., Any]:
    """`fn` returning (True, result), or (False, message) when it raised: the handler's own message reaches
    the agent, not evalspec's description of it."""
    if inspect.iscoroutinefunction(fn):
        async def run_async(args: Any, world: Any) -> tuple[bool, Any]:
            try:
                return True, await fn(args, world)
            except Exception as exc:
                return False, _message(exc)
        return run_async

    def run(args: Any, world: Any) -> tuple[bool, Any]:
        try:
            return True, fn(args, world)
        except Exception as exc:
            return False, _message(exc)
    return run


def handler(tool: ToolSpec, base_dir: Path) -> Callable[..., Any]:
    """The tool's python function, imported (a bad reference is a ProviderError naming the tool)."""
    assert tool.python is not None
    try:
        return load_callable(tool.python, base_dir)
    except LoadError as exc:
        raise ProviderError(f"tools: {tool.name}: {exc}") from None


async def answer_tool(tool: ToolSpec, args: Any, world: dict[str, Any] | None, base_dir: Path,
                      variables: Mapping[str, object], timeout: float) -> ToolAnswer:
    """The answer to one call of `tool` with `args`, changing `world` as its handler does."""
    if tool.python is None:
        try:
            return ToolAnswer(as_json(render_value(tool.returns, {**variables, "args": args})))
        except TemplateProblem as exc:
            raise ProviderError(f"tools: {tool.name}: returns: {exc}") from None
    fn = _guarded(handler(tool, base_dir))
    try:
        ok, value = await asyncio.wait_for(call_user(fn, args, world if world is not None else {}), timeout)
    except (TimeoutError, asyncio.TimeoutError):
        ok, value = False, f"{tool.python} timed out after {timeout:g}s"
    except UserCodeError as exc:  # SystemExit and the like: still the handler's failure, not the run's
        ok, value = False, str(exc)
    if not ok:
        return ToolAnswer(as_json({"error": value}), error=str(value))
    return ToolAnswer(as_json(value))

