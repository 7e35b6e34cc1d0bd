"""Curves from run.json records: score, tokens and cost per point, the terms a curve is described by, charts.

Seed 002 describes each dimension by its own term: half-life for memory (first point whose mean score is
below 0.5), failure point for coreference (first point where most samples fail), stable range for topic
switch and conflict handling (`stable_until`: the largest x up to which the mean stays at or above the SLA
minimum covering it, 0.8 without an SLA). Curve tests sharing a `chart` are drawn together.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, TypedDict, cast

from evalspec.results.rundata import Curve, CurvePoint, CurveSla, Record, SlaSpec, SlaStatus, Term
from evalspec.results.stream import fed
from evalspec.results.verdict import mean_std

STABLE_DEFAULT = 0.8
TERMS = ("half_life", "failure_point", "stable_range")
DEFAULT_TERMS: list[Term] = ["half_life", "failure_point"]


def as_number(v: Any) -> float | None:
    """A curve value as a number (booleans are not numbers), or None."""
    if isinstance(v, bool):
        return None
    try:
        return float(v)
    except (TypeError, ValueError):
        return None


class PointUsage(TypedDict):
    """Mean tokens and cost per conversation at one curve point."""

    prompt_tokens: float | None
    completion_tokens: float | None
    strategy_tokens: float | None
    tokens: float | None
    cost: float | None


def covered_points(points: list[CurvePoint], at: float) -> list[CurvePoint]:
    """The measured points an SLA entry `at` covers (numeric value <= at, a mean score), by value: the one
    reading of curve values that SLA verdicts and their text share."""
    covered = [p for p in points if p["mean"] is not None and (x := as_number(p["value"])) is not None and x <= at]
    return sorted(covered, key=lambda p: as_number(p["value"]) or 0.0)


def sla_entry_status(entry: CurveSla) -> SlaStatus:
    """`missed` (a covered point below its target: a failure beats no data), `no data` or `met`."""
    if entry.get("missed_at") or (not entry["passed"] and not entry["no_data"]):
        return "missed"
    return "no data" if entry["no_data"] else "met"


def binding_point(covered: list[CurvePoint]) -> CurvePoint:
    """The covered point an SLA is measured by: the lowest mean; on a tie the furthest value (the SLA
    holds up to there, which is what a reader checks it for)."""
    lowest: CurvePoint = min(reversed(covered), key=lambda p: p["mean"] if p["mean"] is not None else 0.0)
    return lowest


def _mean(values: list[float]) -> float | None:
    return round(sum(values) / len(values), 6) if values else None


def point_usage(samples: Sequence[Record]) -> PointUsage:
    """Mean tokens (prompt, completion, the strategy's, total) and cost per conversation at one point."""
    def per(key: str) -> float | None:
        return _mean([float(v) for s in samples if (v := s.get(key)) is not None])  # type: ignore[arg-type]

    totals = [float((s.get("tokens") or 0) + (s.get("strategy_tokens") or 0)) for s in samples
              if s.get("tokens") is not None or s.get("strategy_tokens") is not None]
    costs = [float((s.get("cost") or 0.0) + (s.get("strategy_cost") or 0.0)) for s in samples
             if s.get("cost") is not None or s.get("strategy_cost") is not None]
    return {"prompt_tokens": per("prompt_tokens"), "completion_tokens": per("completion_tokens"),
            "strategy_tokens": per("strategy_tokens"), "tokens": _mean(totals), "cost": _mean(costs)}


def stable_until(points: list[CurvePoint], slas: list[SlaSpec]) -> Any:
    """The largest x up to which every point's mean reaches the SLA minimum covering it (else 0.8);
    None when the first point is already below."""
    ordered = sorted(points, key=lambda p: as_number(p["value"]) or 0.0) if all(
        as_number(p["value"]) is not None for p in points) else list(points)
    last = None
    for p in ordered:
        x = as_number(p["value"])
        covering = sorted((s for s in slas if x is not None and x <= s["at"]), key=lambda s: s["at"])
        floor = covering[0]["min_score"] if covering else STABLE_DEFAULT
        if p["mean"] is None or p["mean"] < floor:
            break
        last = p["value"]
    return last


def sample_floor(value: Any, slas: list[SlaSpec]) -> float:
    """The score below which a sample at `value` fails: the minimum of the SLA covering it (the
    narrowest), else 0.5 — the one definition the failure point and SLAs share (docs/en/rule-self-tests.md#verdicts-that-hold)."""
    x = as_number(value)
    covering = sorted((s for s in slas if x is not None and x <= s["at"]), key=lambda s: s["at"])
    return float(covering[0]["min_score"]) if covering else 0.5


def failure_point(points: list[CurvePoint], by_value: dict[str, list[Record]], slas: list[SlaSpec]) -> Any:
    """The first curve value where most scored samples fail (score below the floor of their point)."""
    for p in points:
        scores = [v for s in by_value[str(p["value"])] if s["status"] != "error" and (v := s.get("score")) is not None]
        floor = sample_floor(p["value"], slas)
        if scores and sum(1 for v in scores if v < floor) * 2 > len(scores):
            return p["value"]
    return None


def curves(records: Iterable[Mapping[str, Any]]) -> list[Curve]:
    """Per curve test and provider: points (score, tokens, cost), half-life, failure point, stable range, SLAs."""
    return fed(records, CurveSamples()).result()


class CurveSamples:
    """`curves` as the records pass by (a `stream.Fold`): the records of curve tests, per test and provider."""

    def __init__(self) -> None:
        self.groups: dict[tuple[str, str, str], list[Record]] = defaultdict(list)

    def add(self, r: Mapping[str, Any]) -> None:
        if r.get("curve"):
            self.groups[(r["suite"], r["test"], r["provider"])].append(cast(Record, r))

    def result(self) -> list[Curve]:
        return [_curve(suite, test, provider, recs) for (suite, test, provider), recs in self.groups.items()]


def _curve(suite: str, test: str, provider: str, recs: list[Record]) -> Curve:
    """One curve: its points, terms and SLA entries, from the records of its test × provider."""
    var = str(recs[0]["curve"])
    by_value: dict[str, list[Record]] = {}
    raw_values: dict[str, object] = {}  # each point's value as the matrix gave it
    for r in recs:
        v = r["matrix"].get(var)
        by_value.setdefault(str(v), []).append(r)
        raw_values[str(v)] = v
    points: list[CurvePoint] = []
    for key, samples in by_value.items():
        scored = [v for s in samples if s["status"] != "error" and (v := s.get("score")) is not None]
        mean, std = mean_std(scored)
        passed = sum(1 for s in samples if s["status"] in ("passed", "xpassed"))
        points.append({"value": raw_values[key], "mean": mean, "std": std, "n": len(samples),
                       "passed": passed, "errors": sum(1 for s in samples if s["status"] == "error"),
                       **point_usage(samples)})
    half_life = next((p["value"] for p in points if p["mean"] is not None and p["mean"] < 0.5), None)
    failure = failure_point(points, by_value, recs[0].get("sla") or [])
    slas: list[CurveSla] = []
    for sla in recs[0].get("sla") or []:
        covered = covered_points(points, sla["at"])
        missed = [p["value"] for p in covered if p["mean"] is not None and p["mean"] < sla["min_score"]]
        # no data when a point it covers has no scored sample (all errored), or it covers none (docs/en/rule-self-tests.md#verdicts-that-hold)
        unscored = [p["value"] for p in points if p["mean"] is None
                    and (x := as_number(p["value"])) is not None and x <= sla["at"]]
        slas.append({"at": sla["at"], "min_score": sla["min_score"],
                     "passed": bool(covered) and not missed and not unscored,
                     "missed_at": missed, "no_data": not covered or bool(unscored), "unscored_at": unscored})
    stable = stable_until(points, recs[0].get("sla") or [])
    term = recs[0].get("curve_summary")
    return {"suite": suite, "test": test, "name": recs[0]["name"], "provider": provider, "variable": var,
            "chart": recs[0].get("chart"), "describe": [term] if term else list(DEFAULT_TERMS),
            "points": points, "half_life": half_life, "failure_point": failure, "stable_until": stable,
            "stable_range": [points[0]["value"], stable] if stable is not None and points else None,
            "sla": slas}


def charts(curve_list: list[Curve]) -> list[dict[str, Any]]:
    """Curves grouped into charts: by `chart` across the run, else one chart per suite × test: {title, chart,
    variable, curves} (the reporters' shape, typed when they are)."""
    grouped: dict[tuple[str, ...], list[Curve]] = defaultdict(list)
    for c in curve_list:
        key: tuple[str, ...] = ("chart", str(c["chart"])) if c.get("chart") else ("test", c["suite"], c["test"])
        grouped[key].append(c)
    out: list[dict[str, Any]] = []
    for key, members in grouped.items():
        title = key[1] if key[0] == "chart" else f"{members[0].get('name')} ({members[0]['test']})"
        out.append({"title": title, "chart": key[1] if key[0] == "chart" else None,
                    "variable": members[0]["variable"], "curves": members})
    return out


def terms_text(curve: Curve) -> str:
    """The terms a curve is described by, spelled out: `half-life 8 · failure point 5`, `stable until 6`."""
    parts = []
    for term in curve.get("describe") or DEFAULT_TERMS:
        if term == "half_life":
            parts.append(f"half-life {curve['half_life']}" if curve["half_life"] is not None else "half-life: not reached")
        elif term == "failure_point":
            parts.append(f"failure point {curve['failure_point']}" if curve["failure_point"] is not None
                         else "failure point: not reached")
        elif term == "stable_range":
            rng = curve.get("stable_range")
            parts.append(f"stable range {rng[0]}–{rng[1]}" if rng else "stable range: none (first point below)")
    return " · ".join(parts)
