"""The runs `evalspec view` serves: every `.evalspec/runs/*/run.json` under the project directory, and any
run.json named on the command line, each by its run id."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TypedDict

from evalspec.core.errors import ConfigError, EvalspecError
from evalspec.results.rundata import RunData
from evalspec.results.runjson import read_run

RUNS_DIR = Path(".evalspec") / "runs"
#: a run.json larger than this is read one record at a time (docs/en/scale-and-ray.md#memory); a smaller
#: one whole, so that a project of many small runs holds no open temporary file per run
LARGE_RUN_BYTES = 8 << 20



class _RunRowRequired(TypedDict):
    id: str
    started: str | None
    suites: list[str | None]
    passed: int
    failed: int
    errors: int
    pass_rate: float | None
    path: str


class RunRow(_RunRowRequired, total=False):
    """One run as the run list shows it (`GET /api/runs`)."""

    verdicts_passed: int  # what the pass rate counts, for its interval (docs/en/statistics.md)
    verdicts_failed: int
    unreadable: str  # what is wrong with its run.json: no counts then


def listed(row: RunRow) -> dict[str, object]:
    """A run as `GET /api/runs` lists it: its counts, or what is wrong with its file."""
    shown: dict[str, object] = {"id": row["id"], "started": row["started"], "suites": row["suites"],
                                "passed": row["passed"], "failed": row["failed"], "errors": row["errors"]}
    if "unreadable" in row:
        shown["unreadable"] = row["unreadable"]
    return shown


class UnknownRun(EvalspecError, LookupError):
    """No served run has this id."""


class UnreadableRun(EvalspecError, ValueError):
    """A served run whose run.json cannot be read back (cut short, not UTF-8, of the wrong shape): named
    with what is wrong, while the other runs are served as usual."""


@dataclass
class RunStore:
    root: Path
    extra: list[Path] = field(default_factory=list)
    _cache: dict[Path, tuple[tuple[int, int, int], RunData | str]] = field(default_factory=dict)

    def paths(self) -> dict[str, Path]:
        """Run id → run.json, looked up afresh (a run finished while the page was open shows up); a run.json
        that cannot be read is listed under its folder's name."""
        found: dict[str, Path] = {}
        runs = self.root / RUNS_DIR
        candidates = sorted(runs.glob("*/run.json")) if runs.is_dir() else []
        for path in [*candidates, *self.extra]:
            data = self._read(path)
            if data is None:
                continue
            run_id = str(data.get("run_id") or path.parent.name) if isinstance(data, dict) else path.parent.name
            if found.get(run_id, path).resolve() != path.resolve():
                run_id = f"{run_id}~{len(found)}"  # two files claim one id: both stay reachable
            found[run_id] = path
        return found

    def _read(self, path: Path) -> RunData | str | None:
        """The run, or what is wrong with its file (`read_run`'s words); None when there is no file."""
        try:
            stat = path.stat()
        except OSError:
            return None
        stamp = (stat.st_mtime_ns, stat.st_size, stat.st_ino)  # a file put in its place (a triage) is new
        cached = self._cache.get(path)
        if cached and cached[0] == stamp:
            return cached[1]
        try:
            data: RunData | str = read_run(path, stream=stat.st_size > LARGE_RUN_BYTES)
        except ConfigError as exc:
            data = "; ".join(str(p) for p in exc.problems)
        self._cache[path] = (stamp, data)
        return data

    def load(self, run_id: str) -> tuple[RunData, Path]:
        """The run (as read from disk now) and its file; UnknownRun names the ids there are, UnreadableRun
        the file and what is wrong with it."""
        paths = self.paths()
        path = paths.get(run_id)
        data = self._read(path) if path else None
        if path is None or data is None:
            known = ", ".join(sorted(paths)) or "none"
            raise UnknownRun(f"no run {run_id!r} (runs: {known})")
        if isinstance(data, str):
            raise UnreadableRun(f"run {run_id!r} is unreadable: {data}")
        return data, path

    def summaries(self) -> list[RunRow]:
        """`GET /api/runs`: [{id, started, suites, passed, failed, errors}], newest first; a run that cannot
        be read has `unreadable` (what is wrong) and no counts."""
        rows: list[RunRow] = []
        for run_id, path in self.paths().items():
            data = self._read(path)
            if data is None:
                continue  # the file went away since it was listed
            if isinstance(data, str):
                rows.append({"id": run_id, "started": None, "suites": [], "passed": 0, "failed": 0, "errors": 0,
                             "pass_rate": None, "path": str(path), "unreadable": data})
                continue
            summary, gate = data.get("summary") or {}, data.get("gate") or {}
            row: RunRow = {"id": run_id, "started": data.get("started_at"),
                           "suites": [s.get("path") for s in data.get("suites", []) if isinstance(s, dict)],
                           "passed": summary.get("passed", 0), "failed": summary.get("failed", 0),
                           "errors": summary.get("error", 0), "pass_rate": gate.get("pass_rate"), "path": str(path)}
            if "verdicts_passed" in gate:  # what the pass rate counts, for its interval (docs/en/statistics.md)
                row["verdicts_passed"] = gate["verdicts_passed"]
            if "verdicts_failed" in gate:
                row["verdicts_failed"] = gate["verdicts_failed"]
            rows.append(row)
        return sorted(rows, key=lambda r: str(r["started"] or ""), reverse=True)

    def runs_in_time_order(self) -> list[tuple[str, RunData]]:
        ordered = [row for row in reversed(self.summaries()) if "unreadable" not in row]
        return [(row["id"], self.load(row["id"])[0]) for row in ordered]
