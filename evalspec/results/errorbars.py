"""How sure the run's figures are (docs/en/statistics.md): the 95 % interval of every pass rate, pass@k and
pass^k of repeated tests, and each critical rule's breach rate as a bound — run.json's `summary` figures,
computed from the verdicts and records alone (the formulas are results/stats.py's)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, TypedDict

from evalspec.results.rundata import RedLine, SuiteSummary
from evalspec.results.stats import clopper_pearson_upper, pass_k_curves, wilson
from evalspec.results.stream import fed
from evalspec.results.verdict import Tally, Verdict, VerdictTally, reaches_gate, tallied

DIGITS = 6
NAMES_MOST = 10_000  # rule names `RedLines` keeps made
_PLAIN = frozenset({str, int, float, bool, type(None)})  # a rule's fields that key the names it keeps


def interval(successes: int, n: int) -> list[float] | None:
    """`[lo, hi]`: the 95 % Wilson interval of a share; None over nothing (shown `—`)."""
    found = wilson(successes, n)
    return None if found is None else [round(found[0], DIGITS), round(found[1], DIGITS)]


class PassK(TypedDict):
    pass_at_k: list[float]
    pass_hat_k: list[float]


class Figures(PassK):
    """A pass rate, its interval and what it counts, with pass@k and pass^k (a suite's, the run's)."""

    passed: int
    failed: int
    pass_rate: float | None
    pass_rate_ci: list[float] | None


class RunFigures(PassK):
    """The summary's `pass_rate_ci`, `pass_at_k`, `pass_hat_k` and `suites`."""

    pass_rate_ci: list[float] | None
    suites: list[SuiteSummary]


def pass_k(vs: VerdictTally | Iterable[Verdict], include_drafts: bool = False) -> PassK:
    """`pass_at_k` and `pass_hat_k` for k = 1..m over the verdicts the pass rate counts whose test
    repeated (m: their smallest repeat count); empty lists when none repeated."""
    return _pass_k(tallied(vs, include_drafts).run)


def _pass_k(t: Tally) -> PassK:
    at, hat = pass_k_curves(t.repeats)
    return {"pass_at_k": [round(x, DIGITS) for x in at], "pass_hat_k": [round(x, DIGITS) for x in hat]}


def figures(vs: VerdictTally | Iterable[Verdict], include_drafts: bool = False) -> Figures:
    """The pass rate of `vs`, its interval and what it counts, with pass@k and pass^k."""
    return _figures(tallied(vs, include_drafts).run)


def _figures(t: Tally) -> Figures:
    total = t.passed + t.failed
    k = _pass_k(t)
    return {"passed": t.passed, "failed": t.failed, "pass_rate": t.passed / total if total else None,
            "pass_rate_ci": interval(t.passed, total), "pass_at_k": k["pass_at_k"], "pass_hat_k": k["pass_hat_k"]}


def run_figures(suites: Sequence[Mapping[str, Any]], vs: VerdictTally | Iterable[Verdict],
                include_drafts: bool) -> RunFigures:
    """The summary's `pass_rate_ci`, `pass_at_k`, `pass_hat_k`, and the same per suite (`suites`)."""
    counted = tallied(vs, include_drafts)
    whole = _figures(counted.run)
    return {"pass_rate_ci": whole["pass_rate_ci"], "pass_at_k": whole["pass_at_k"], "pass_hat_k": whole["pass_hat_k"],
            "suites": [_suite_figures(s["path"], _figures(counted.suite(s["path"]))) for s in suites]}


def _suite_figures(suite: str, f: Figures) -> SuiteSummary:
    return {"suite": suite, "passed": f["passed"], "failed": f["failed"], "pass_rate": f["pass_rate"],
            "pass_rate_ci": f["pass_rate_ci"], "pass_at_k": f["pass_at_k"], "pass_hat_k": f["pass_hat_k"]}


def rule_name(a: Mapping[str, Any]) -> str:
    """A critical rule as reports name it: its turn (when it is a turn's) and the rule as written."""
    from evalspec.results.findings import rule_text  # (docs/en/scale-and-ray.md#start-up)

    where = f"turn {a['turn']}: " if a.get("turn") is not None else ""
    return where + rule_text(dict(a))


def red_lines(records: Iterable[Mapping[str, Any]], include_drafts: bool = False) -> list[RedLine]:
    """`summary.red_lines`: per critical rule and suite, the conversations it was decided on (played,
    simulated, attacked and recorded alike; drafts only when they gate), the breaches among them, the
    breach rate and its one-sided 95 % Clopper–Pearson upper bound; `max_rate` where the rule has one."""
    return fed(records, RedLines(include_drafts)).result()


class RedLines:
    """`red_lines` as the records pass by (a `stream.Fold`): per suite and critical rule, the conversations
    it was decided on and the breaches among them."""

    def __init__(self, include_drafts: bool = False) -> None:
        self.include_drafts = include_drafts
        self.found: dict[tuple[str, str], list[int]] = {}  # (suite, rule) -> [decided on, breaches]
        self.bounds: dict[tuple[str, str], _Bound] = {}
        self.names: dict[tuple[object, ...], str] = {}  # `rule_name` of a rule seen before

    def add(self, r: Mapping[str, Any]) -> None:
        if not reaches_gate(r, self.include_drafts):
            return
        for a in r.get("assertions") or []:
            if a.get("severity") != "critical" or a.get("skipped") or a.get("pass") is None:
                continue
            key = (str(r["suite"]), self._name(a))
            line = self.found.setdefault(key, [0, 0])
            line[0] += 1
            line[1] += a["pass"] is False
            if a.get("max_rate") is not None:
                self.bounds[key] = {"max_rate": float(a["max_rate"])}

    def _name(self, a: Mapping[str, Any]) -> str:
        """`rule_name(a)`, made once per rule (a million conversations break or keep the same few)."""
        value, turn, kind = a.get("value"), a.get("turn"), a.get("type")
        if type(value) not in _PLAIN or type(turn) not in _PLAIN or type(kind) not in _PLAIN:
            return rule_name(a)
        key = (turn, kind, type(value), value)  # True is 1, but not the same rule
        if (name := self.names.get(key)) is None:
            name = rule_name(a)
            if len(self.names) < NAMES_MOST:
                self.names[key] = name
        return name

    def result(self) -> list[RedLine]:
        out: list[RedLine] = []
        for (suite, rule), (n, breaches) in self.found.items():
            upper = clopper_pearson_upper(breaches, n)
            out.append({"rule": rule, "suite": suite, "n": n, "breaches": breaches,
                        **self.bounds.get((suite, rule), {}), "rate": round(breaches / n, DIGITS),
                        "upper": None if upper is None else round(upper, DIGITS)})
        return out


class _Bound(TypedDict, total=False):
    max_rate: float
