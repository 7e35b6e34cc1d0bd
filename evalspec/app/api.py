"""The Python API: `run(suites, **options) -> Run` and `await arun(...)`; the CLI is a layer over them.

    >>> import evalspec
    >>> result = evalspec.run(["suites/*.yaml"], concurrency=4, use_cache=False)
    >>> result.exit_code, result.summary["pass_rate"]

`arun` works inside a running event loop; `run` does too (it plays the run on a worker thread then).
Neither changes the objects it is given.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import dataclasses
import glob
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalspec.config.loader import load_suites
from evalspec.config.model import Suite
from evalspec.config.numbers import finite_problem
from evalspec.core.errors import ConfigError, Problem
from evalspec.plan.build import Plan, Selection, checked_plan
from evalspec.play.runner import RunOptions, new_run_id, run_plan
from evalspec.results.gate import GateDecision
from evalspec.results.rundata import Gate, Record, RunData, Summary
from evalspec.results.runjson import write_json
from evalspec.results.stream import to_plain

SuiteLike = str | Path | Suite
OPTION_NAMES = tuple(f.name for f in dataclasses.fields(RunOptions))


@dataclass(frozen=True)
class Run:
    """A finished run: the content of run.json (`to_json()`), where it was written, and typed views of it."""

    data: RunData
    path: Path | None = None

    def __repr__(self) -> str:  # a large run's full repr takes seconds (asyncio.run formats it twice)
        gate, results = self.data.get("gate"), self.data.get("results") or ()
        return f"Run(records={len(results)}, exit_code={gate and gate.get('exit_code')}, path={self.path!r})"

    @property
    def records(self) -> list[Record]:
        """One record per test instance × provider × repeat, in plan order."""
        return list(self.data["results"])

    @property
    def summary(self) -> Summary:
        return self.data["summary"].copy()

    @property
    def gate(self) -> Gate:
        """run.json's `gate`: the decision results/gate.py reached (`decision`), as stored."""
        return self.data["gate"].copy()

    @property
    def decision(self) -> GateDecision:
        """The gate, typed: passed, exit code (docs/en/reference/cli.md), reasons, per suite."""
        return GateDecision.from_json(self.data["gate"])

    @property
    def exit_code(self) -> int:
        """The gate's exit code, as the CLI exits with it."""
        return int(self.data["gate"]["exit_code"])

    @property
    def results(self) -> list[Record]:  # `records` under its earlier name, kept for scripts that use it (docs/en/python-api.md)
        return self.records

    def to_json(self) -> RunData:
        """The run.json content (a deep copy: changing it leaves this run alone)."""
        copied: RunData = json.loads(json.dumps(self.data, ensure_ascii=False, default=to_plain))
        return copied

    @classmethod
    def from_json(cls, path: str | Path) -> Run:
        """A run read back from its run.json."""
        from evalspec.results.runjson import read_run

        return cls(read_run(path), Path(path))


RunResult = Run  # the class under its earlier name, kept for scripts that import it (docs/en/python-api.md)


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


POINTER = "run.json.path"  # in .evalspec/runs/<id>/: where that run's run.json was written (`run -o`)




def load(suites: SuiteLike | Sequence[SuiteLike], variables: Mapping[str, Any] | None = None) -> list[Suite]:
    """Paths and globs loaded (with `variables`), `Suite` objects kept as they are, in the order given."""
    items: list[SuiteLike] = [suites] if isinstance(suites, (str, Path, Suite)) else list(suites)
    files = {id(item): expand_paths([str(item)]) for item in items if not isinstance(item, Suite)}
    every = list(dict.fromkeys(p for paths in files.values() for p in paths))
    by_path = dict(zip(every, load_suites(list(every), variables))) if every else {}
    out: list[Suite] = []
    for item in items:
        for suite in [item] if isinstance(item, Suite) else [by_path[p] for p in files[id(item)]]:
            if all(suite is not o for o in out):
                out.append(suite)
    return out


def make_options(options: RunOptions | None, overrides: Mapping[str, Any]) -> RunOptions:
    """A new RunOptions: `options` (untouched) with keyword overrides; unknown names are a TypeError."""
    unknown = sorted(set(overrides) - set(OPTION_NAMES))
    if unknown:
        raise TypeError(f"unknown run option(s) {', '.join(unknown)}; valid: {', '.join(OPTION_NAMES)}")
    base = options or RunOptions()
    chosen = dataclasses.replace(base, **overrides)
    if (problem := finite_problem(chosen.fail_under, repr(chosen.fail_under))) is not None:
        raise ConfigError([Problem("run()", None, "fail_under", problem)])
    if chosen.run_dir is None:
        chosen = dataclasses.replace(chosen, run_dir=Path(".evalspec/runs") / new_run_id())
    return chosen


async def arun(suites: SuiteLike | Sequence[SuiteLike] = ("suites/*.yaml",), *, output: str | Path | None = None,
               selection: Selection | None = None, variables: Mapping[str, Any] | None = None,
               options: RunOptions | None = None, baseline: str | None = None, gate: str | None = None,
               confirm: int = 2, on_progress: Callable[[str], None] | None = None, judge_sample: float | None = None,
               seed: int = 0, plan: Plan | None = None, **overrides: Any) -> Run:
    """Load, plan, play and grade; diff against `baseline` when given; a judge's second opinion on
    `judge_sample` of the rule verdicts when given (picked by `seed`); write run.json.

    `overrides` are RunOptions fields (concurrency, run_dir, use_cache, fail_under, ...). Config problems
    raise ConfigError before anything runs. `plan`: the checked plan of these suites from
    `preflight.prepare` (then `selection` is the plan's own), so nothing is planned twice."""
    from evalspec.review.attach import attach_baseline, find_baseline

    loaded = load(suites, variables)
    if plan is None or not plan.checked:
        plan = checked_plan(loaded, selection)
    if not plan:
        raise ConfigError([Problem(", ".join(str(s.path) for s in loaded), None, "",
                                   "no test matches the selection (filter/tags/providers); nothing was run")])
    if options is None and "concurrency" not in overrides:
        overrides = {**overrides, "concurrency": max(int(s.option("concurrency")) for s in loaded)}
    chosen = make_options(options, overrides)
    assert chosen.run_dir is not None
    base = find_baseline(baseline, chosen.run_dir)
    if judge_sample:
        from evalspec.review.second_opinion import needs_judges

        needs_judges(loaded)
    data = await run_plan(loaded, plan, chosen, base.data)  # `pairwise: {against: baseline}` reads its transcripts
    data = await attach_baseline(data, base, gate, confirm, loaded, plan, chosen.concurrency, on_progress)
    from evalspec.review.second_opinion import after_grading

    data = await after_grading(data, {i.key: i for i in plan} if judge_sample else {}, loaded, judge_sample, seed,
                               chosen.cache_dir if chosen.use_cache else None)
    assert chosen.run_dir is not None
    out = Path(output) if output else chosen.run_dir / "run.json"
    write_json(out, data)
    if out != chosen.run_dir / "run.json":  # `evalspec report` finds the last run through its run directory
        (chosen.run_dir / POINTER).write_text(str(out.absolute()), encoding="utf-8")
    return Run(data, out)


def run(suites: SuiteLike | Sequence[SuiteLike] = ("suites/*.yaml",), *, output: str | Path | None = None,
        selection: Selection | None = None, variables: Mapping[str, Any] | None = None,
        options: RunOptions | None = None, baseline: str | None = None, gate: str | None = None,
        confirm: int = 2, on_progress: Callable[[str], None] | None = None, judge_sample: float | None = None,
        seed: int = 0, plan: Plan | None = None, **overrides: Any) -> Run:
    """`arun` for synchronous code; inside a running event loop it plays on a worker thread."""
    job = arun(suites, output=output, selection=selection, variables=variables, options=options,
               baseline=baseline, gate=gate, confirm=confirm, on_progress=on_progress, judge_sample=judge_sample,
               seed=seed, plan=plan, **overrides)
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(job)
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, job).result()
