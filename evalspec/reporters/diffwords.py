"""A diff's "first problem" column in the language being spoken (docs/en/reports-and-gate.md#language).

`compare_runs` words each changed test's first problem in English, as run.json's baseline section and the
diff's JSON keep it; a screen re-words it from HEAD's own record (its `reason_zh`, the catalogue's
"turn"/"critical"), the way every report words a finding."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from evalspec.reporters.catalogue import current
from evalspec.reporters.vocabulary import first_problem
from evalspec.results.compare import suite_key
from evalspec.results.stream import DiskRows, keys_of, records_at

if TYPE_CHECKING:
    from evalspec.results.rundata import Baseline, BaselineRow, Record, RunData

_STOPPED = ("failed", "xfailed", "error")


def spoken(diff: Baseline, head: RunData, problems: Sequence[int] | None = None) -> Baseline:
    """`diff` with each row's `problem` taken from the first failed, xfailed or errored HEAD record of its
    test, in the language being spoken (English: `diff` itself); `diff` is left as it is. `problems` (from
    `compare_runs`) gives each row's record by position: the rows go by one at a time, and a large diff's
    reworded rows go to disk as its rows are (docs/en/scale-and-ray.md#memory)."""
    if current() == "en":
        return diff
    rows = diff.get("rows") or []
    records = head.get("results") or []
    if problems is None:
        problems = _positions(rows, records)
    if max(problems, default=-1) < 0:  # no row names a problem: nothing to word again
        return diff
    out: list[BaselineRow] | DiskRows = DiskRows() if isinstance(rows, DiskRows) else []
    chunk: list[tuple[BaselineRow, int]] = []
    for row, at in zip(rows, problems, strict=True):
        chunk.append((row, at if row.get("problem") else -1))
        if len(chunk) >= _CHUNK:
            _reword(chunk, records, out)
    _reword(chunk, records, out)
    return {**diff, "rows": out}  # type: ignore[typeddict-item]  # a DiskRows of rows stands for their list


_CHUNK = 1000


def _reword(chunk: list[tuple[BaselineRow, int]], records: Sequence[Record], out: list[BaselineRow] | DiskRows) -> None:
    """The chunk's rows, each with its record's problem in the language spoken, added to `out` (the
    records read back with the file opened once)."""
    wanted = [at for _, at in chunk if at >= 0]
    found = dict(zip(wanted, records_at(records, wanted), strict=True))
    for row, at in chunk:
        record = found.get(at)
        out.append({**row, "problem": first_problem(record)[:300]} if record is not None else row)  # type: ignore[arg-type]
    chunk.clear()


def _positions(rows: Sequence[BaselineRow], records: Sequence[Record]) -> list[int]:
    """Each row's first failed, xfailed or errored HEAD record, by position (-1: none), for a diff made
    without them (run.json's `baseline`: a run of its size keeps its rows in memory)."""
    wanted = {(row["suite"], row["test_id"], row["provider"]) for row in rows if row.get("problem")}
    suites: dict[str, str] = {}
    first: dict[tuple[str, str, str], int] = {}
    for i, r in enumerate(keys_of(records)):  # a light record keeps what the key and the status need
        if r.get("status") not in _STOPPED:
            continue
        suite = suites.get(r["suite"]) or suites.setdefault(r["suite"], suite_key(r["suite"]))
        key = suite, r.get("base_id") or records[i]["test_id"], r["provider"]
        if key in wanted:
            first.setdefault(key, i)
    return [first.get((row["suite"], row["test_id"], row["provider"]), -1) for row in rows]
