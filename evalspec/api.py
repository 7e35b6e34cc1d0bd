"""The Python API: `run(paths)` does what `evalspec run` does and returns the run."""

from __future__ import annotations

import asyncio
import glob
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalspec.config.loader import load_suites
from evalspec.errors import ConfigError, Problem
from evalspec.plan import Selection, build_plan
from evalspec.runner import RunOptions, new_run_id, run_plan


@dataclass
class RunResult:
    """A finished run: its run.json data, where it was written, and the exit code."""

    data: dict[str, Any]
    path: Path | None

    @property
    def exit_code(self) -> int:
        return int(self.data["gate"]["exit_code"])

    @property
    def results(self) -> list[dict[str, Any]]:
        return list(self.data["results"])


def expand_paths(patterns: Sequence[str]) -> list[Path]:
    """Globs and plain paths -> existing suite files, in the order given (duplicates dropped)."""
    out: list[Path] = []
    missing: list[str] = []
    for pattern in patterns or ["suites/*.yaml"]:
        matches = sorted(glob.glob(pattern, recursive=True)) if glob.has_magic(pattern) else [pattern]
        matches = [m for m in matches if Path(m).is_file()] if glob.has_magic(pattern) else matches
        if not matches or not all(Path(m).exists() for m in matches):
            missing.append(pattern)
            continue
        for m in matches:
            p = Path(m)
            if p not in out:
                out.append(p)
    if missing:
        raise ConfigError([Problem(m, None, "", "no suite file matches") for m in missing])
    return out


def write_json(path: Path, data: Mapping[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(data, ensure_ascii=False, indent=2), encoding="utf-8")
    tmp.replace(path)


def run(paths: Sequence[str | Path] = ("suites/*.yaml",), *, output: str | Path | None = None,
        selection: Selection | None = None, variables: Mapping[str, Any] | None = None,
        options: RunOptions | None = None) -> RunResult:
    """Load, plan, play and grade; write run.json. Config problems raise ConfigError."""
    suites = load_suites(list(expand_paths([str(p) for p in paths])), variables)
    plan = build_plan(suites, selection)
    options = options or RunOptions()
    if options.run_dir is None:
        options.run_dir = Path(".evalspec/runs") / new_run_id()
    data = asyncio.run(run_plan(suites, plan, options))
    out = Path(output) if output else options.run_dir / "run.json"
    write_json(out, data)
    return RunResult(data, out)
