"""What every part of a promptfoo import shares (`Source`): the config's path, the output folder, the notes
(what is not converted), the problems (what refuses the import) and the extra files written beside the
suite. Each part (`Providers`, `TestFiles`, `Prompts`, `Checks`) is a `Part` holding that one `Source`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import regex
import yaml

from evalspec.core.errors import Problem


class _Yaml12Loader(yaml.SafeLoader):
    """YAML as promptfoo (js-yaml) reads it: YAML 1.2's booleans and numbers, so `yes`, `off`, `NO` stay text
    and `12:30` is not the number 750 (PyYAML reads YAML 1.1); dates are still dates, as in js-yaml."""


_KINDS = ("tag:yaml.org,2002:bool", "tag:yaml.org,2002:int", "tag:yaml.org,2002:float")
_Yaml12Loader.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers if tag not in _KINDS]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()}
_Yaml12Loader.add_implicit_resolver(_KINDS[0], regex.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF"))
_Yaml12Loader.add_implicit_resolver(_KINDS[1], regex.compile(r"^(?:[-+]?[1-9][0-9]*|[-+]?0|0x[0-9a-fA-F]+)$"),
                                    list("-+0123456789"))
_Yaml12Loader.add_implicit_resolver(
    _KINDS[2], regex.compile(r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?"
                             r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$"), list("-+0123456789."))


def load_yaml(text: str) -> Any:
    """A promptfoo YAML document (a config, a test or var file, a chat prompt), read as promptfoo reads it."""
    return yaml.load(text, Loader=_Yaml12Loader)  # noqa: S506 - a SafeLoader with YAML 1.2's scalars


def is_glob(target: str) -> bool:
    return any(ch in target for ch in "*?[")


class Source:
    """One config being imported, and what reading it has found so far."""

    def __init__(self, path: Path, out_dir: Path) -> None:
        self.path, self.out_dir = path, out_dir
        self.notes: list[str] = []
        self.problems: list[Problem] = []
        self.files: dict[str, str] = {}
        # a model provider reports its tool calls: a reply may be calls, which promptfoo's text checks read as
        # their JSON (checks on the text are then written as promptfoo's, in JavaScript); set from the
        # converted providers, before the checks
        self.reported_tools = False

    def problem(self, where: str, message: str) -> None:
        self.problems.append(Problem(str(self.path), None, where, message))

    def note(self, text: str) -> None:
        """A note once (a test's turns and prompts may ask again)."""
        if text not in self.notes:
            self.notes.append(text)

    def matches(self, pattern: str) -> list[Path]:
        """The paths a glob (relative to the config) names inside the config's folder, sorted; what it names
        outside is left out."""
        import glob

        folder = self.path.parent.resolve()
        return sorted(p for p in (Path(f).resolve() for f in glob.glob(str(folder / pattern))) if p.is_relative_to(folder))

    def inside(self, target: str, where: str) -> Path | None:
        """A `file://` target of the config, or None (a problem) when it is outside the config's folder."""
        folder = self.path.parent.resolve()
        absolute = (folder / target).resolve()
        if not absolute.is_relative_to(folder):
            self.problem(where, f"file://{target} is outside the config's folder {folder}: not read; "
                                "copy the file next to the config")
            return None
        return absolute

    def relative(self, target: str, where: str) -> str | None:
        """A path in the config (relative to it) as seen from the output folder."""
        import os

        absolute = self.inside(target, where)
        if absolute is not None and not absolute.exists():
            self.problem(where, f"file://{target} does not exist next to the config ({absolute}): the suite "
                                "would call a missing file; copy it there and import again")
            return None
        return None if absolute is None else Path(os.path.relpath(absolute, self.out_dir.resolve())).as_posix()


class Part:
    """A part of a promptfoo import (providers, test files, prompts, checks): its own code and state, over
    the one `Source` every part shares."""

    def __init__(self, source: Source) -> None:
        self.source = source


def short(value: Any) -> str:
    """A value of the source as a note shows it: its repr, cut at 80 characters."""
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."
