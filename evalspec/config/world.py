"""The world the bot acts on and the suite's own tools (docs/en/world.md), as the loader reads them.

`world:` (suite or test level; a test's replaces the suite's) is a JSON object written inline or
`{file: PATH}` (a template: a matrix key may name the file); each conversation starts from its own deep
copy of it. The suite's `tools:` are answered by evalspec for every `model:` and `python:` provider:
`python: FILE.py:fn` called as fn(args, world), or `returns:` (a value or a template over `args`). Only
those two kinds have their calls answered, so a world beside any other provider is a validation error.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path
from typing import Any

from evalspec.config.interpolate import is_template, render_text
from evalspec.config.model import ProviderSpec, Suite, TestSpec, ToolSpec
from evalspec.config.paths import PathKey
from evalspec.core.errors import ControlFlow, TemplateProblem

ANSWERED_KINDS = ("model", "python")  # the provider kinds whose tool calls evalspec answers
WORLD_CHECKS = ("world", "world-matches", "world-unchanged")  # they read the final world
Bad = Callable[[PathKey, str], None]


class WorldFileProblem(ControlFlow):
    """A world file that cannot be read as a JSON object: the message names it and says why."""


@lru_cache(maxsize=64)
def _read(path: str, mtime_ns: int, size: int) -> Any:
    with open(path, encoding="utf-8") as handle:
        return json.load(handle)


def read_json_object(path: Path, what: str = "world") -> dict[str, Any]:
    """The JSON object in `path` (read once while the file is unchanged; never changed by a caller: every
    conversation plays on its own deep copy)."""
    try:
        stat = os.stat(path)
        data = _read(str(path), stat.st_mtime_ns, stat.st_size)
    except FileNotFoundError:
        raise WorldFileProblem(f"{what} file {path} not found") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise WorldFileProblem(f"cannot read {what} file {path}: {exc}") from None
    except ValueError as exc:
        raise WorldFileProblem(f"{what} file {path} is not JSON: {exc}") from None
    if not isinstance(data, dict):
        raise WorldFileProblem(f"{what} file {path} holds {type(data).__name__}, not a JSON object")
    return data


def is_file_ref(raw: Any) -> bool:
    return isinstance(raw, dict) and set(raw) == {"file"} and isinstance(raw["file"], str)


def load_world(raw: Any, variables: dict[str, Any], base_dir: Path) -> dict[str, Any] | None:
    """The initial world of one instance: the inline mapping, or the JSON object of `file:` rendered with
    the instance's vars. A bad template or file is a ValueError naming it."""
    if raw is None:
        return None
    if not is_file_ref(raw):
        return dict(raw)
    try:
        name = render_text(raw["file"], variables)
    except TemplateProblem as exc:
        raise WorldFileProblem(f"world: file: {exc}") from None
    return read_json_object(base_dir / name)


def parse_world(raw: Any, where: PathKey, bad: Bad, base_dir: Path) -> Any:
    """`world:` as written, its file read now when it names no template (a bad one is a validation error)."""
    if raw is None:
        return None
    if not isinstance(raw, dict):
        bad(where, f"'world' is a JSON object (inline) or {{file: PATH}}, got {type(raw).__name__}")
        return None
    if is_file_ref(raw) and not is_template(raw["file"]):
        try:
            read_json_object(base_dir / raw["file"])
        except WorldFileProblem as exc:
            bad((*where, "file"), str(exc))
            return None
    return raw


def parse_tools(raw: Any, where: PathKey, bad: Bad, base_dir: Path) -> list[ToolSpec]:
    """The suite's `tools:`: each a name, a description, its parameters' JSON Schema and one answer."""
    if raw is None:
        return []
    if not isinstance(raw, list):
        bad(where, "'tools' is a list of tools: {name, description, parameters, python: FILE.py:fn | returns: ...}")
        return []
    tools: list[ToolSpec] = []
    seen: set[str] = set()
    for i, entry in enumerate(raw):
        at = (*where, i)
        if not isinstance(entry, dict) or not isinstance(entry.get("name"), str) or not entry["name"]:
            continue  # the schema names it
        name = entry["name"]
        if name in seen:
            bad((*at, "name"), f"tool '{name}' is declared twice")
            continue
        seen.add(name)
        answers = [k for k in ("python", "returns") if k in entry]
        if len(answers) != 1:
            bad(at, f"tool '{name}' needs one of 'python: FILE.py:fn' (called as fn(args, world)) or 'returns:' "
                    f"(a value or a template over args)" + (" , not both" if answers else ""))
            continue
        python = entry.get("python")
        if python is not None and (problem := _python_ref_problem(python, base_dir)):
            bad((*at, "python"), f"tool '{name}': {problem}")
            continue
        parameters = entry.get("parameters")
        tools.append(ToolSpec(name=name, description=str(entry.get("description") or ""),
                              parameters=dict(parameters) if isinstance(parameters, dict)
                              else {"type": "object", "properties": {}},
                              python=python, returns=entry.get("returns"), where=at))
    return tools


def _python_ref_problem(ref: Any, base_dir: Path) -> str | None:
    if not isinstance(ref, str) or ":" not in ref:
        return f"'{ref}' is not FILE.py:function or module:function"
    target = ref.rpartition(":")[0]
    if target.endswith(".py") and not (base_dir / target).is_file():
        return f"{target} not found (relative to the suite)"
    return None


def declared_names(spec: ProviderSpec) -> list[str]:
    """The tool names a provider's own inline `tools:` list declares (a FILE.py:NAME list is read at preflight)."""
    tools = spec.config.get("tools")
    if not isinstance(tools, list):
        return []
    return [str(t.get("function", t).get("name")) for t in tools if isinstance(t, dict)]


def tools_problems(suite: Suite, bad: Bad) -> None:
    """A suite tool's name in a provider's own `tools:` would be answered twice: a validation error."""
    names = {t.name for t in suite.tools}
    for spec in suite.providers:
        for i, name in enumerate(declared_names(spec)):
            if name in names:
                bad((*spec.where, "tools", i), f"tool '{name}' is in provider '{spec.id}' `tools` and in the "
                                               "suite's `tools:`: declare it once")


def test_world_problems(suite: Suite, test: TestSpec, world_where: PathKey, bad: Bad) -> None:
    """A world beside a provider whose calls evalspec does not answer, and world checks with no world."""
    world = test.world if test.world is not None else suite.world
    if test.recorded:
        return
    runs_on = [p for p in suite.providers if test.providers is None or p.id in test.providers]
    if world is not None:
        for p in runs_on:
            if p.kind not in ANSWERED_KINDS:
                at = world_where if test.world is not None else ("world",)
                bad(at, f"a world changes only through the tools evalspec answers, and {p.kind} provider "
                        f"'{p.id}' reports its tool calls (they are not answered): give the world to tests of "
                        f"model: or python: providers (`providers:` on the test)")
                break
    for turn in test.conversation:
        for spec in turn.asserts:
            if spec.type in WORLD_CHECKS:
                bad(spec.where, f"'{spec.type}' reads the world at the end of the conversation: put it under the "
                                "test's 'assert:', not under a turn")
    if world is None:
        for spec in test.asserts:
            if spec.type in WORLD_CHECKS:
                bad(spec.where, f"'{spec.type}' reads the final world, and test '{test.id}' has none: give the "
                                "suite or the test a `world:`")
