"""YAML loading that keeps the line of every key and item, so errors can point at them."""

from __future__ import annotations

from typing import Any

import yaml

from evalspec.errors import ConfigError, Problem

PathKey = tuple[str | int, ...]

# libyaml's parser when PyYAML was built with it (several times faster); marks are kept either way
_Loader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def format_path(path: PathKey) -> str:
    """`("tests", 2, "conversation", 1)` -> `tests[2].conversation[1]`."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out


class LineMap:
    """Maps a data path to the 1-based line where it is written."""

    def __init__(self, file: str) -> None:
        self.file = file
        self.lines: dict[PathKey, int] = {}

    def line(self, path: PathKey) -> int | None:
        """The line of `path`, or of its closest written ancestor."""
        p = tuple(path)
        while p:
            if p in self.lines:
                return self.lines[p]
            p = p[:-1]
        return self.lines.get((), 1)

    def problem(self, path: PathKey, message: str) -> Problem:
        return Problem(self.file, self.line(path), format_path(path), message)


def load_yaml(text: str, file: str) -> tuple[Any, LineMap]:
    """Parse `text`; duplicate keys are errors (YAML would silently keep the last)."""
    lines = LineMap(file)
    loader = _Loader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None, lines
        problems: list[Problem] = []
        data = _build(loader, node, (), lines, problems)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else None
        msg = str(exc.problem or exc.context)
        if exc.context and exc.context_mark and exc.problem:
            msg += f" ({exc.context} started at line {exc.context_mark.line + 1})"

        raise ConfigError([Problem(file, line, "", f"invalid YAML: {msg}")]) from None
    except yaml.YAMLError as exc:
        raise ConfigError([Problem(file, None, "", f"invalid YAML: {exc}")]) from None
    finally:
        loader.dispose()
    if problems:
        raise ConfigError(problems)
    return data, lines


def _build(loader: Any, node: yaml.Node, path: PathKey, lines: LineMap,
           problems: list[Problem]) -> Any:
    lines.lines.setdefault(path, node.start_mark.line + 1)
    if isinstance(node, yaml.MappingNode):
        loader.flatten_mapping(node)
        out: dict[Any, Any] = {}
        for key_node, value_node in node.value:
            key = loader.construct_object(key_node, deep=True)  # type: ignore[no-untyped-call]
            if not isinstance(key, (str, int, float, bool)) or key is None:
                problems.append(Problem(lines.file, key_node.start_mark.line + 1, format_path(path),
                                        f"keys must be plain strings, got {key!r}"))
                continue
            key = str(key) if not isinstance(key, str) else key
            child = (*path, key)
            if key in out:
                problems.append(Problem(lines.file, key_node.start_mark.line + 1, format_path(child),
                                        f"duplicate key '{key}'"))
            lines.lines[child] = key_node.start_mark.line + 1
            out[key] = _build(loader, value_node, child, lines, problems)
        return out
    if isinstance(node, yaml.SequenceNode):
        return [_build(loader, item, (*path, i), lines, problems) for i, item in enumerate(node.value)]
    return loader.construct_object(node, deep=True)  # type: ignore[no-untyped-call]
