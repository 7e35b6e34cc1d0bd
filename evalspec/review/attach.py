"""`evalspec run --baseline BASE.json|auto [--gate regressions] [--confirm N]`: find the baseline before
the run, then diff, confirm and gate after it."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from evalspec.config.model import Suite
from evalspec.plan.build import Instance
from evalspec.results.gate import apply_baseline, no_baseline
from evalspec.results.rundata import RunData
from evalspec.results.runjson import untyped


@dataclass
class Baseline:
    """The baseline run (None when there is none) and where it came from, or why there is none."""

    data: RunData | None
    source: str | None
    note: str = ""
    asked: bool = True  # --baseline was given (a path or auto)


def find_baseline(spec: str | None, run_dir: Path) -> Baseline:
    """A path is read (a bad file is exit 2); `auto` asks GitHub and never stops the run (the artifact's
    run.json is kept in `run_dir` as baseline.json, read from there one record at a time)."""
    if not spec:
        return Baseline(None, None, "no --baseline given", asked=False)
    if spec == "auto":
        from evalspec.review.github_baseline import fetch_auto_baseline

        data, note = fetch_auto_baseline(run_dir)
        return Baseline(data, f"auto: {note}" if data is not None else None, note)
    from evalspec.results.runjson import read_run

    return Baseline(read_run(spec, check=True, stream=True), spec)  # its records stay on disk (docs/en/scale-and-ray.md#memory)


def wants_baseline(baseline: Baseline, suites: list[Suite], cli_mode: str | None) -> bool:
    return baseline.asked or cli_mode in ("regressions", "regressions-paired") or \
        (cli_mode is None and any(s.gate_mode == "regressions" for s in suites))


async def attach_baseline(run: RunData, baseline: Baseline, cli_mode: str | None, confirm: int,
                          suites: list[Suite], plan: Sequence[Instance], concurrency: int,
                          notify: Callable[[str], None] | None = None) -> RunData:
    """The run with its `baseline` key and, where asked for, the regressions gate."""
    if not wants_baseline(baseline, suites, cli_mode):
        return run
    if baseline.data is None:
        apply_baseline(untyped(run), no_baseline(baseline.note), cli_mode)  # in place
        return run
    from evalspec.results.compare import compare_runs  # (a run without a baseline loads no diff)
    from evalspec.results.stream import JournalRecords
    from evalspec.review.confirm import confirm_regressions

    # a large run's rows go to disk as they are made, as `evalspec diff`'s do (docs/en/scale-and-ray.md#memory)
    diff = compare_runs(baseline.data, run, baseline.source, rows_on_disk=isinstance(run["results"], JournalRecords))
    diff["confirm"] = confirm
    diff = await confirm_regressions(diff, suites, plan, confirm, concurrency, notify)
    apply_baseline(untyped(run), untyped(diff), cli_mode)  # in place
    return run
