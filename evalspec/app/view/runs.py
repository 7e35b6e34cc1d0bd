"""The runs `evalspec view` serves: every `.evalspec/runs/*/run.json` under the project directory, and any
run.json named on the command line, each by its run id."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evalspec.core.errors import EvalspecError

RUNS_DIR = Path(".evalspec") / "runs"


class UnknownRun(EvalspecError, LookupError):
    """No served run has this id."""


@dataclass
class RunStore:
    root: Path
    extra: list[Path] = field(default_factory=list)
    _cache: dict[Path, tuple[tuple[int, int], dict[str, Any]]] = field(default_factory=dict)

    def paths(self) -> dict[str, Path]:
        """Run id → run.json, looked up afresh (a run finished while the page was open shows up)."""
        found: dict[str, Path] = {}
        runs = self.root / RUNS_DIR
        candidates = sorted(runs.glob("*/run.json")) if runs.is_dir() else []
        for path in [*candidates, *self.extra]:
            data = self._read(path)
            if data is None:
                continue
            run_id = str(data.get("run_id") or path.parent.name)
            if found.get(run_id, path).resolve() != path.resolve():
                run_id = f"{run_id}~{len(found)}"  # two files claim one id: both stay reachable
            found[run_id] = path
        return found

    def _read(self, path: Path) -> dict[str, Any] | None:
        try:
            stat = path.stat()
        except OSError:
            return None
        stamp = (stat.st_mtime_ns, stat.st_size)
        cached = self._cache.get(path)
        if cached and cached[0] == stamp:
            return cached[1]
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, ValueError):
            return None
        if not isinstance(data, dict) or not isinstance(data.get("results"), list):
            return None
        self._cache[path] = (stamp, data)
        return data

    def load(self, run_id: str) -> tuple[dict[str, Any], Path]:
        """The run (as read from disk now) and its file; UnknownRun names the ids there are."""
        paths = self.paths()
        path = paths.get(run_id)
        data = self._read(path) if path else None
        if path is None or data is None:
            known = ", ".join(sorted(paths)) or "none"
            raise UnknownRun(f"no run {run_id!r} (runs: {known})")
        return data, path

    def summaries(self) -> list[dict[str, Any]]:
        """`GET /api/runs`: [{id, started, suites, passed, failed, errors}], newest first."""
        rows = []
        for run_id, path in self.paths().items():
            data = self._read(path) or {}
            summary = data.get("summary") or {}
            rows.append({"id": run_id, "started": data.get("started_at"),
                         "suites": [s.get("path") for s in data.get("suites", []) if isinstance(s, dict)],
                         "passed": summary.get("passed", 0), "failed": summary.get("failed", 0),
                         "errors": summary.get("error", 0),
                         "pass_rate": (data.get("gate") or {}).get("pass_rate"), "path": str(path)})
        return sorted(rows, key=lambda r: str(r["started"] or ""), reverse=True)

    def runs_in_time_order(self) -> list[tuple[str, dict[str, Any]]]:
        ordered = reversed(self.summaries())
        return [(row["id"], self.load(row["id"])[0]) for row in ordered]
