"""A diff's "first problem" column in the language being spoken (docs/en/reports-and-gate.md#language).

`compare_runs` words each changed test's first problem in English, as run.json's baseline section and the
diff's JSON keep it; a screen re-words it from HEAD's own record (its `reason_zh`, the catalogue's
"turn"/"critical"), the way every report words a finding."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from evalspec.reporters.catalogue import current
from evalspec.reporters.vocabulary import first_problem
from evalspec.results.compare import suite_key

if TYPE_CHECKING:
    from evalspec.results.rundata import Baseline, RunData

_STOPPED = ("failed", "xfailed", "error")


def spoken(diff: Baseline, head: RunData) -> Baseline:
    """`diff` with each row's `problem` taken from the first failed, xfailed or errored HEAD record of its
    test, in the language being spoken (English: `diff` itself); `diff` is left as it is."""
    if current() == "en":
        return diff
    from evalspec.results.stream import records_where

    wanted = {(row["suite"], row["test_id"], row["provider"]) for row in diff.get("rows") or [] if row.get("problem")}
    suites: dict[str, str] = {}

    def key(r: Mapping[str, Any]) -> tuple[str, str, str]:
        suite = suites.get(r["suite"]) or suites.setdefault(r["suite"], suite_key(r["suite"]))
        return suite, r.get("base_id") or r["test_id"], r["provider"]

    # only the records of rows with a problem are read back (a streamed run's light records are tested);
    # a test's first such record wins
    stopped = records_where(head.get("results") or [], lambda r: r.get("status") in _STOPPED and key(r) in wanted)
    first = {key(r): r for r in reversed(stopped)}
    rows = []
    for row in diff.get("rows") or []:
        record = first.get((row["suite"], row["test_id"], row["provider"]))
        rows.append({**row, "problem": first_problem(record)[:300]} if record is not None and row.get("problem") else row)
    return {**diff, "rows": rows}
