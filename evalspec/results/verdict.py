"""From assertion results to a test status; from repeats to a verdict; whether a verdict is gated (the gate
itself is results/gate.py)."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from evalspec.assertions.evaluate import AssertionResult
from evalspec.assertions.outcome import failure_stands
from evalspec.results.rundata import Category, Record, RunVerdict, StatusName

STATUSES = ("passed", "failed", "error", "skipped", "xfailed", "xpassed")
# The words every report counts verdicts (and the live bar conversations) with, in display order.
CATEGORIES = ("passed", "failed", "error", "xfailed", "xpassed", "measured", "drafts", "skipped")


def category(status: StatusName, curve: bool, draft: bool, gated_drafts: bool = False) -> Category:
    """How a verdict (or one conversation) is counted and shown: a curve point is `measured` whatever
    its status, unless it reached no measurement at all (`error`); a draft is `drafts` unless drafts gate."""
    if curve:
        return "error" if status == "error" else "measured"
    if draft and not gated_drafts:
        return "drafts"
    return status


def record_category(record: Record | Mapping[str, Any], gated_drafts: bool = False) -> Category:
    return category(record["status"], bool(record.get("curve")), bool(record.get("draft")), gated_drafts)


def _field(x: Any, name: str) -> Any:
    # a record or a run.json verdict (a dict), a `Verdict`: asked first, as the Mapping check is an ABC's
    # (slow over a million verdicts)
    if isinstance(x, dict):
        return x.get(name)
    if isinstance(x, Verdict):
        return getattr(x, name, None)
    return x.get(name) if isinstance(x, Mapping) else getattr(x, name, None)


def reaches_gate(x: Verdict | Mapping[str, Any], include_drafts: bool = False) -> bool:
    """Whether a verdict's (or a record's) errors and critical failures gate: all but drafts, unless
    drafts gate (`--include-drafts`); curve points and xfail tests included (docs/en/rule-self-tests.md#verdicts-that-hold)."""
    return include_drafts or not _field(x, "draft")


def is_gated(x: Verdict | Mapping[str, Any], include_drafts: bool = False) -> bool:
    """Whether a verdict's (or a record's, or a diff side's) pass or fail counts in the pass rate and the
    regressions gate: not a draft (unless drafts gate), an xfail test, a measured curve point or skipped."""
    return gated_kind(x, include_drafts) and _field(x, "status") != "skipped"


def gated_kind(x: Verdict | Mapping[str, Any], include_drafts: bool = False) -> bool:
    """Whether a verdict is of the kind the pass rate counts, whatever its status: a skipped one of this kind
    is a gated verdict that was not reached (a run of only those exits 3, docs/en/reports-and-gate.md)."""
    return (reaches_gate(x, include_drafts) and not _field(x, "xfail")
            and not (_field(x, "curve") or _field(x, "measured")))


def gate_reach(x: Verdict | Mapping[str, Any], include_drafts: bool = False) -> tuple[bool, bool, bool]:
    """(`reaches_gate`, `gated_kind`, `is_gated`) of a verdict or a record, each field read once: what a
    tally asks of every verdict (docs/en/scale-and-ray.md#memory)."""
    kind = gated_kind(x, include_drafts)
    return kind or reaches_gate(x, include_drafts), kind, kind and _field(x, "status") != "skipped"


def tally(vs: Iterable[Verdict], include_drafts: bool = False) -> tuple[int, int]:
    """(passed, failed) over the gated verdicts: what every pass rate counts, and its interval
    (docs/en/reports-and-gate.md, docs/en/statistics.md)."""
    gated = [v.status for v in vs if is_gated(v, include_drafts)]
    return gated.count("passed"), gated.count("failed")


def breached_bounded_rule(record: Mapping[str, Any]) -> bool:
    """A record that failed a critical rule gated on its breach rate (`max_rate`): its verdict is `failed`,
    but the rule does not block by itself (docs/en/statistics.md#red-lines-as-bounds)."""
    return any(a.get("severity") == "critical" and a.get("max_rate") is not None and a.get("pass") is False
               for a in record.get("assertions") or [])


def counts(vs: Iterable[Verdict], slas: Iterable[Mapping[str, Any]]) -> dict[str, int]:
    """The verdict counts every report shows, in one vocabulary."""
    return suite_counts(tallied(vs).run, slas)


def suite_counts(t: Tally, slas: Iterable[Mapping[str, Any]]) -> dict[str, int]:
    """`counts` of the verdicts `t` tallied."""
    return {**t.categories, "slas_missed": sum(1 for s in slas if s["status"] == "missed")}


def test_score(results: list[AssertionResult]) -> float | None:
    """Weighted mean of assertion scores (errors have no score and are left out)."""
    scored = [(r.score, r.weight) for r in results if r.score is not None]
    total = sum(w for _, w in scored)
    if not scored:
        return None
    if total == 0:
        return sum(s for s, _ in scored) / len(scored)
    return sum(s * w for s, w in scored) / total


def decide(results: list[AssertionResult], threshold: float | None, error: str | None,
           xfail: str | None) -> tuple[StatusName, float | None, bool]:
    """(status, score, critical_failed) for one conversation.

    docs/en/rule-self-tests.md#verdicts-that-hold: a critical assertion that failed makes it `failed` whatever `xfail` says or errors follow; an
    error never hides a failure (failures that stand whatever the errored checks would say are `failed`, the
    errors listed in the record: `outcome`). A skipped rule (docs/en/recorded-conversations.md) is neither a pass nor a fail, and a
    conversation whose every rule was skipped checked nothing: `skipped`, never `passed`."""
    checked = [r for r in results if not r.skipped]
    score = test_score(checked)
    critical = any(r.passed is False and r.severity == "critical" and r.max_rate is None for r in checked)
    if critical:
        return "failed", score, True
    if any(r.passed is False and r.severity == "critical" for r in checked):  # under `max_rate`: fails, never blocks
        return "failed", score, False
    if error or any(r.error for r in checked):
        parts = [(r.passed, r.score, r.weight) for r in checked]
        # a threshold over a conversation cut short: its checks never reached are not here to bound the score
        stands = not xfail and (threshold is None or not error) and failure_stands(parts, threshold)
        return ("failed" if stands else "error"), score, False
    if results and not checked:
        return "skipped", None, False
    if threshold is not None:
        passed = (score if score is not None else 1.0) >= threshold
    else:
        passed = all(r.passed for r in checked)
    if xfail:
        return ("xpassed" if passed else "xfailed"), score, critical
    return ("passed" if passed else "failed"), score, critical


@dataclass(slots=True)
class Verdict:
    """One gated verdict: a test instance × provider with its repeats combined."""

    suite: str
    test_id: str
    name: str
    provider: str
    status: StatusName
    n: int
    passed: int
    pass_rate: float
    pass_hat_k: bool
    score_mean: float | None
    score_std: float | None
    gated: bool
    critical_failed: bool
    draft: bool
    xfail: bool
    curve: bool
    records: list[int] = field(default_factory=list)
    category: Category = "passed"  # `aggregate.verdict_stream` sets it (`category`)
    reduce: str | None = None  # min | mean: this verdict stands for all instances of a matrix test
    simulator: str | None = None  # the simulator that played the user (docs/en/agents.md#comparing-two-simulators)

    @property
    def measured(self) -> bool:
        return self.curve

    def to_json(self) -> RunVerdict:
        out: RunVerdict = {
            "suite": self.suite, "test_id": self.test_id, "name": self.name, "provider": self.provider,
            "status": self.status, "n": self.n, "passed": self.passed, "pass_rate": self.pass_rate,
            "pass_hat_k": self.pass_hat_k, "score_mean": self.score_mean, "score_std": self.score_std,
            "gated": self.gated, "critical_failed": self.critical_failed, "draft": self.draft, "xfail": self.xfail,
            "curve": self.curve, "category": self.category}
        if self.reduce:
            out["reduce"] = self.reduce
        if self.simulator:
            out["simulator"] = self.simulator
        out["measured"] = self.curve
        if self.repeats():
            out["c"] = self.passed  # c of n repeats passed (docs/en/statistics.md)
        return out

    def repeats(self) -> tuple[int, int] | None:
        """(n, c): the repeats played and passed, for pass@k and pass^k; None unless the test repeated."""
        return (self.n, self.passed) if self.n >= 2 and not self.reduce else None


CRITICAL_MOST = 50  # critical failures named in a gate reason; the rest are counted ("and 3 more")


@dataclass(slots=True)
class Tally:
    """What the gate and the figures read of a set of verdicts (a suite's, a simulator's, the run's), counted
    as the verdicts arrive: memory that does not grow with the run (docs/en/scale-and-ray.md#memory)."""

    passed: int = 0  # gated verdicts that passed (`is_gated`)
    failed: int = 0
    errors: int = 0  # errors that reach the gate (`reaches_gate`)
    skipped: int = 0  # gated verdicts that were not reached (`gated_kind`)
    critical: list[str] = field(default_factory=list)  # `test_id @ provider` of the first CRITICAL_MOST
    critical_more: int = 0  # critical failures beyond those named
    categories: dict[str, int] = field(default_factory=lambda: dict.fromkeys(CATEGORIES, 0))
    repeats: Counter[tuple[int, int]] = field(default_factory=Counter)  # (n, c) of gated repeated verdicts

    def add(self, v: Verdict, include_drafts: bool = False) -> None:
        self.counted(v, *gate_reach(v, include_drafts))

    def counted(self, v: Verdict, reaches: bool, kind: bool, gated: bool) -> None:
        """`add` with `v`'s `gate_reach` already known."""
        self.categories[v.category] += 1
        status = v.status
        if gated:
            self.passed += status == "passed"
            self.failed += status == "failed"
            if status in ("passed", "failed") and (r := v.repeats()) is not None:
                self.repeats[r] += 1
        if reaches:
            self.errors += status == "error"
            if status == "failed" and v.critical_failed:  # wherever it happens: curve points, xfail tests
                if len(self.critical) < CRITICAL_MOST:
                    self.critical.append(v.test_id + " @ " + v.provider)
                else:
                    self.critical_more += 1
        self.skipped += status == "skipped" and kind

    def critical_text(self) -> str:
        """The critical failures named, at most CRITICAL_MOST of them: the reason text stays bounded."""
        named = ", ".join(self.critical)
        return f"{named} and {self.critical_more} more" if self.critical_more else named


class VerdictTally:
    """The run's verdicts counted once as they arrive: the run's tally, each suite's and each simulator's
    (docs/en/statistics.md, docs/en/agents.md#comparing-two-simulators), in first-seen order."""

    def __init__(self, include_drafts: bool = False, vs: Iterable[Verdict] = ()) -> None:
        self.include_drafts = include_drafts
        self.run = Tally()
        self.suites: dict[str, Tally] = {}
        self.simulators: dict[str, Tally] = {}
        self.count = 0
        for v in vs:
            self.add(v)

    def add(self, v: Verdict) -> None:
        self.count += 1
        reach = gate_reach(v, self.include_drafts)
        self.run.counted(v, *reach)
        if (suite := self.suites.get(v.suite)) is None:
            suite = self.suites[v.suite] = Tally()
        suite.counted(v, *reach)
        if v.simulator:
            if (simulator := self.simulators.get(v.simulator)) is None:
                simulator = self.simulators[v.simulator] = Tally()
            simulator.counted(v, *reach)

    def suite(self, path: str) -> Tally:
        return self.suites.get(path) or Tally()


def tallied(vs: VerdictTally | Iterable[Verdict], include_drafts: bool = False) -> VerdictTally:
    """`vs` counted (a `VerdictTally` as it is)."""
    return vs if isinstance(vs, VerdictTally) else VerdictTally(include_drafts, vs)


def rule_passes(passed: int, repeats: int, rule: str | float) -> bool:
    """Whether `passed` of `repeats` plays make a passing verdict under the repeat rule: all, majority (more
    than half), any, or a share of the plays."""
    if rule == "all":
        return passed == repeats
    if rule == "majority":
        return passed * 2 > repeats
    if rule == "any":
        return passed > 0
    return passed / repeats >= float(rule)


def combine_repeats(records: Sequence[Mapping[str, Any]], rule: str | float) -> tuple[StatusName, int, float, bool]:
    """(status, passed count, pass rate, pass^k) for one instance's repeats under the pass rule.

    A critical assertion that failed in any repeat fails the verdict (docs/en/rule-self-tests.md#verdicts-that-hold): the pass rule and
    `xfail` combine the other assertions only."""
    statuses = [r["status"] for r in records if r["status"] != "skipped"]  # a repeat that checked nothing
    n = len(statuses)
    ok = sum(1 for s in statuses if s in ("passed", "xpassed"))
    rate = ok / n if n else 0.0
    if any(r.get("critical_failed") or breached_bounded_rule(r) for r in records):
        return "failed", ok, rate, False
    if "error" in statuses:
        return "error", ok, rate, False
    if not statuses:
        return "skipped", 0, 0.0, False
    passed = rule_passes(ok, n, rule)
    xfail = any(r.get("xfail") for r in records)
    if xfail:
        return ("xpassed" if passed else "xfailed"), ok, rate, ok == n
    return ("passed" if passed else "failed"), ok, rate, ok == n


def mean_std(values: list[float]) -> tuple[float | None, float | None]:
    if not values:
        return None, None
    mean = sum(values) / len(values)
    return mean, math.sqrt(sum((v - mean) ** 2 for v in values) / len(values))


REDUCE_THRESHOLD = 0.5  # a reduced test without `threshold:` passes at the assertions' default


ReduceKey = tuple[str, str, str, str]


class Reducer:
    """docs/en/recorded-conversations.md `reduce: min | mean`: the verdicts of a matrix test's instances (per
    provider) become one verdict, in the place of its first instance, scored by the minimum (or mean) of the
    instances' scores and passed only when that score reaches the test's threshold. A critical failure in
    any instance fails it, an error in any instance makes it an error; its records are every instance's
    (reports list each). As verdicts arrive: a reduced test's are held in its group (one test's matrix)
    until `close`, and so is every verdict after the group's first, to keep their order; the others pass
    straight through (docs/en/scale-and-ray.md#memory)."""

    def __init__(self, gated_drafts: bool = False) -> None:
        self.gated_drafts = gated_drafts
        self.groups: dict[ReduceKey, tuple[Mapping[str, Any], list[Verdict]]] = {}
        self.pending: list[Verdict | ReduceKey] = []

    def add(self, v: Verdict, first: Mapping[str, Any] | None) -> list[Verdict]:
        """The verdicts ready to go out once `v` (whose first record is `first`) is in."""
        if first is None or not first.get("reduce"):
            if not self.pending:
                return [v]
            self.pending.append(v)
            return []
        key = (v.suite, str(first.get("test") or v.test_id), v.provider, v.simulator or "")
        if key not in self.groups:
            self.groups[key] = (first, [])
            self.pending.append(key)
        self.groups[key][1].append(v)
        return []

    def close(self) -> list[Verdict]:
        """Every held verdict, each group reduced in its place; the groups start afresh."""
        if not self.pending:  # nothing held: every instance of a test without `reduce:` closes one
            return []
        out = [x if isinstance(x, Verdict) else _reduced(self.groups[x][1], self.groups[x][0], self.gated_drafts)
               for x in self.pending]
        self.groups, self.pending = {}, []
        return out


def _reduced(group: list[Verdict], first: Mapping[str, Any], gated_drafts: bool) -> Verdict:
    how = str(first["reduce"])
    scores = [v.score_mean for v in group if v.score_mean is not None]
    score = (min(scores) if how == "min" else sum(scores) / len(scores)) if scores else None
    statuses = [v.status for v in group]
    critical = any(v.critical_failed for v in group)
    status: StatusName
    threshold = first.get("threshold")
    xfail = bool(first.get("xfail"))
    if critical:
        status = "failed"
    elif "error" in statuses:
        status = "error"
    elif all(s == "skipped" for s in statuses):
        status = "skipped"
    else:
        if score is None:
            passed = all(s in ("passed", "xpassed", "skipped") for s in statuses)
        else:
            passed = score >= (threshold if threshold is not None else REDUCE_THRESHOLD)
        status = ("xpassed" if passed else "xfailed") if xfail else ("passed" if passed else "failed")
    ok = sum(1 for s in statuses if s in ("passed", "xpassed"))
    curve, draft = bool(first.get("curve")), bool(first.get("draft"))
    gated = not draft and not xfail and not curve and status != "skipped"
    test_id = str(first.get("test") or group[0].test_id)
    simulator = group[0].simulator
    return Verdict(group[0].suite, f"{test_id}[simulator={simulator}]" if simulator else test_id, group[0].name,
                   group[0].provider,
                   status, sum(v.n for v in group), ok, ok / len(group), all(v.pass_hat_k for v in group),
                   round(score, 6) if score is not None else None, None, gated, critical, draft, xfail, curve,
                   [i for v in group for i in v.records], category(status, curve, draft, gated_drafts), how,
                   simulator)


def verdict_key(record: Record) -> str:
    """The test a record counts for in per-test figures: its instance, or its test under `reduce`."""
    return str(record.get("test") or record["base_id"]) if record.get("reduce") else str(record["base_id"])
