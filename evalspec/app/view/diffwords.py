"""The diff page's "first problem" column in the page's language (docs/en/review.md).

`compare_runs` words each changed test's first problem in English, as run.json's baseline section keeps it;
the page re-words it from HEAD's own record (its `reason_zh`, the catalogue's "turn"/"critical"), the way
every report words a finding."""

from __future__ import annotations

from typing import Any

from evalspec.reporters.catalogue import speaking
from evalspec.reporters.vocabulary import first_problem
from evalspec.results.compare import suite_key

_STOPPED = ("failed", "xfailed", "error")


def speak_problems(diff: dict[str, Any], head: dict[str, Any], lang: str) -> None:
    """Each row's `problem`, from the first failed, xfailed or errored HEAD record of its test, in `lang`."""
    first: dict[tuple[str, str, str], dict[str, Any]] = {}
    for r in head.get("results") or []:
        if r.get("status") in _STOPPED:
            first.setdefault((suite_key(r["suite"]), r.get("base_id") or r["test_id"], r["provider"]), r)
    with speaking(lang):
        for row in diff.get("rows") or []:
            record = first.get((row["suite"], row["test_id"], row["provider"]))
            if record is not None and row.get("problem"):
                row["problem"] = first_problem(record)[:300]
