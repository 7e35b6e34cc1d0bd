"""Pairwise comparisons counted (docs/en/judges.md#comparing-two-bot-versions-pairwise): per suite and
`pairwise` rule, wins, ties, position-inconsistent ties and losses, the win rate (wins over all
comparisons, ties of both kinds included) with its Wilson interval, and against the baseline the
one-sided sign test of losses over wins (ties dropped). Read from run.json's records alone, so every
report can show it; `baseline_sides` finds the other side of `against: baseline` in the baseline run."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from typing import Any

from evalspec.results.errorbars import interval, rule_name
from evalspec.results.rundata import Pairwise
from evalspec.results.stats import sign_test
from evalspec.results.stream import fed

SideKey = tuple[str, str, str]  # suite (as the working directory sees it), instance id with #k, provider
OUTCOMES = ("win", "tie", "inconsistent", "loss")


def side_key(record: Mapping[str, Any]) -> SideKey:
    """The instance a record played, matched across runs (as `--baseline` matches verdicts)."""
    from evalspec.results.compare import suite_key  # (docs/en/scale-and-ray.md#start-up)

    return suite_key(str(record["suite"])), str(record["test_id"]), str(record["provider"])


def baseline_sides(run: Mapping[str, Any] | None, tests: Collection[str]) -> dict[SideKey, Mapping[str, Any]]:
    """The baseline run's records of `tests` (the ids of the tests compared against it) by the instance
    they played; empty without a baseline. Only these stay: a large baseline's records are read from disk
    one at a time (docs/en/scale-and-ray.md#memory). (An instance's id begins with its test's id, then its
    matrix values or row: a record whose id merely begins like one is kept too, and never matched.)"""
    if not run or not tests:
        return {}
    prefixes = tuple(tests)
    return {side_key(r): r for r in run.get("results") or [] if str(r["test_id"]).startswith(prefixes)}


def pairwise_summary(records: Iterable[Mapping[str, Any]]) -> list[Pairwise]:
    """`summary.pairwise`: one line per suite and pairwise rule that reached a verdict somewhere."""
    return fed(records, PairwiseCounts()).result()


class PairwiseCounts:
    """`pairwise_summary` as the records pass by (a `stream.Fold`): the outcomes per suite and pairwise rule."""

    def __init__(self) -> None:
        self.lines: dict[tuple[str, str], dict[str, Any]] = {}

    def add(self, r: Mapping[str, Any]) -> None:
        for a in r.get("assertions") or []:
            found = (a.get("details") or {}).get("pairwise") if a.get("type") == "pairwise" else None
            if not isinstance(found, dict) or found.get("outcome") not in OUTCOMES:
                continue
            line = self.lines.setdefault((str(r["suite"]), rule_name(a)), {
                "suite": str(r["suite"]), "rule": rule_name(a), "against": str(found.get("against") or ""),
                **dict.fromkeys(OUTCOMES, 0)})
            line[found["outcome"]] += 1

    def result(self) -> list[Pairwise]:
        return [_finish(line) for line in self.lines.values()]


def _finish(line: dict[str, Any]) -> Pairwise:
    n = sum(line[o] for o in OUTCOMES)
    out: Pairwise = {"suite": line["suite"], "rule": line["rule"], "against": line["against"], "n": n,
                     "wins": line["win"], "ties": line["tie"], "inconsistent": line["inconsistent"],
                     "losses": line["loss"], "win_rate": line["win"] / n if n else None,
                     "win_rate_ci": interval(line["win"], n)}
    if line["against"] == "baseline":
        out["sign_p"] = sign_test(line["loss"], line["win"])
    return out
