"""Two runs -> a diff: every verdict matched and put in one category, score changes, curve changes
and per-provider latency / tokens / cost, computed from the two run.json files alone.

Verdicts are matched by suite path (relative to the working directory), instance id without `#k`
and provider; both sides' repeats are combined by HEAD's pass rule.
"""

from __future__ import annotations

import math
import os
from array import array
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, cast

from evalspec.extend.transcript import system_messages
from evalspec.results.curves import sla_entry_status
from evalspec.results.findings import first_failure, rule_text
from evalspec.results.rundata import (
    Baseline,
    BaselineRow,
    BaseMeta,
    Curve,
    CurveChange,
    ProviderChange,
    ProviderFigures,
    Record,
    RowCategory,
    RunData,
    Side,
    SlaChange,
)
from evalspec.results.stream import JournalRecords
from evalspec.results.verdict import combine_repeats, is_gated, mean_std, reaches_gate

#: every category, in the order reports list them (the ones that block first)
CATEGORIES = ("regressed", "new failing", "failing, no baseline verdict", "new error", "flaky", "fixed", "recovered",
              "still failing", "new", "removed", "unchanged")
#: categories that fail a regressions gate (an SLA newly missed and a critical rule newly failed block too)
BLOCKING = ("regressed", "new failing", "failing, no baseline verdict")
NO_BASE_VERDICT: RowCategory = "failing, no baseline verdict"
FLAG_ONLY = "a critical assertion"  # a record with `critical_failed` but no failed critical assertion listed
SCORE_DELTA = 0.05

Key = tuple[str, str, str]


def suite_key(path: str) -> str:
    """A suite path as the working directory sees it, so runs made elsewhere still match."""
    p = Path(path)
    if p.is_absolute():
        try:
            return p.resolve().relative_to(Path.cwd().resolve()).as_posix()
        except ValueError:
            return p.as_posix()
    return Path(os.path.normpath(path)).as_posix()


def _outcome(status: str | None) -> str | None:
    """passed / failed / error, or None when there is no verdict (absent or skipped)."""
    if status in ("passed", "xpassed"):
        return "passed"
    if status in ("failed", "xfailed"):
        return "failed"
    if status == "error":
        return "error"
    return None


def category(base: str | None, head: str | None) -> RowCategory:
    """docs/en/reports-and-gate.md#regressions-against-a-baseline's categories, from -> to (statuses already reduced by `_outcome`)."""
    if head == "error":
        return "new error"
    if base is None:
        return "new" if head is None else "new failing" if head == "failed" else "new"
    if head is None:
        return "removed"
    if base == "error":  # docs/en/rule-self-tests.md#verdicts-that-hold: a failure after a base that reached no verdict is not a recovery
        return NO_BASE_VERDICT if head == "failed" else "recovered"
    moved: dict[tuple[str, str], RowCategory] = {("passed", "failed"): "regressed", ("failed", "passed"): "fixed",
                                                 ("failed", "failed"): "still failing"}
    return moved.get((base, head), "unchanged")


class _Group(list[Record]):
    """One instance's repeats in a run, as a row compares them (`_compared`, from the light forms of a
    streamed run: docs/en/scale-and-ray.md#memory), with their positions, so a row that needs a repeat's
    detail reads it back (`_full`)."""

    def __init__(self, results: Sequence[Record]) -> None:
        super().__init__()
        self.results, self.at = results, array("q")


def _lights(results: Sequence[Record]) -> Iterator[Record]:
    """Each record as the comparison reads it: a streamed run's light forms, without reading the records."""
    if isinstance(results, JournalRecords) and results.light is not None:
        return iter(cast(Sequence[Record], results.light))
    return iter(results)


def _groups(run: Mapping[str, Any]) -> dict[Key, _Group]:
    results: Sequence[Record] = run.get("results", [])
    groups: dict[Key, _Group] = {}
    suites: dict[str, str] = {}  # a run has few suites and many records
    for i, r in enumerate(_lights(results)):
        suite = suites.get(r["suite"]) or suites.setdefault(r["suite"], suite_key(r["suite"]))
        test = r.get("base_id") or results[i]["test_id"]  # a light record keeps base_id only
        group = groups.get(key := (suite, test, r["provider"])) or groups.setdefault(key, _Group(results))
        group.append(_compared(r))
        group.at.append(i)
    return groups


def _full(group: _Group) -> Iterator[Record]:
    """The group's records whole (read back one at a time from a streamed run)."""
    for i in group.at:
        yield group.results[i]


#: what a row reads of each repeat (`_side`, `combine_repeats`): the rest stays on disk
COMPARED = ("status", "score", "critical_failed", "xfail", "draft", "curve", "name", "repeat_rule")


def _compared(r: Record) -> Record:
    kept = {k: r[k] for k in COMPARED if k in r}  # type: ignore[literal-required]
    checks = [a for a in r.get("assertions") or [] if a.get("severity") == "critical"]
    if checks:
        kept["assertions"] = checks
    return cast(Record, kept)


def critical_rules(records: Sequence[Record]) -> list[str]:
    """The critical assertions that failed in any repeat, each named by its rule and turn, in order (a rule
    under `max_rate` gates on its breach rate, not here: docs/en/statistics.md#red-lines-as-bounds)."""
    out: dict[str, None] = {}
    for r in records:
        for a in r.get("assertions") or []:
            if a.get("severity") == "critical" and a.get("max_rate") is None and a.get("pass") is False:
                where = f"turn {a['turn']}: " if a.get("turn") is not None else ""
                out[f"{where}{rule_text(a)} ({a.get('scope')})"] = None
    if not out and any(r.get("critical_failed") for r in records):
        out[FLAG_ONLY] = None
    return list(out)


def _side(records: list[Record] | None, rule: str | float) -> Side | None:
    if not records:
        return None
    status, ok, rate, _ = combine_repeats(records, rule)
    score, _ = mean_std([s for r in records if (s := r.get("score")) is not None and r["status"] != "error"])
    first = records[0]
    critical = critical_rules(records) if status == "failed" else []
    return {"status": status, "passed": ok, "n": len(records), "pass_rate": rate, "score": score,
            "critical_failed": bool(critical), "critical_rules": critical,
            "draft": bool(first.get("draft")), "measured": bool(first.get("curve")),
            "xfail": bool(first.get("xfail"))}


def newly_critical(base: Side | None, head: Side | None) -> list[str]:
    """The head's failed critical rules that did not also fail in the matched base verdict (docs/en/rule-self-tests.md#verdicts-that-hold)."""
    if head is None or not reaches_gate(head):
        return []
    known = set(base["critical_rules"]) if base is not None else set()
    if FLAG_ONLY in known:  # the base kept only the flag: any critical failure is one it had
        return []
    return [c for c in head["critical_rules"] if c not in known]


def first_problem(records: Iterable[Record] | None) -> str:
    """The first failure of the first failed (or errored) repeat, in the words every report uses."""
    for r in records or []:
        if r["status"] in ("failed", "xfailed", "error") and (line := first_failure(r)):
            return line[:300]
    return ""


def compare_verdicts(base: Mapping[str, Any], head: Mapping[str, Any]) -> list[BaselineRow]:
    """One row per matched verdict, in HEAD's order, then what only the baseline had."""
    b_groups, h_groups = _groups(base), _groups(head)
    keys = list(h_groups) + [k for k in b_groups if k not in h_groups]
    rows: list[BaselineRow] = []
    for key in keys:
        h_recs, b_recs = h_groups.pop(key, None), b_groups.pop(key, None)  # each group goes once its row is made
        first = (h_recs or b_recs or [])[0]  # every group has a record
        rule = first.get("repeat_rule", "all")
        b, h = _side(b_recs, rule), _side(h_recs, rule)
        cat = category(_outcome(b["status"] if b else None), _outcome(h["status"] if h else None))
        loose = h if h is not None else b
        assert loose is not None
        # drafts, measured points and xfail tests are compared but never block
        gated = h is not None and is_gated(h)
        delta = (h["score"] - b["score"]) if h and b and h["score"] is not None and b["score"] is not None else None
        name = first.get("name", key[1])
        rows.append({
            "suite": key[0], "test_id": key[1], "provider": key[2], "name": name, "category": cat,
            "base": b, "head": h, "score_delta": round(delta, 6) if delta is not None else None,
            "draft": loose["draft"], "measured": loose["measured"],
            # every critical failure gates (curve points and xfail tests too, never drafts) unless the base had it
            "critical_new": bool(newly_critical(b, h)), "critical_newly_failed": newly_critical(b, h),
            "blocking": gated and cat in BLOCKING, "replays": [], "problem": first_problem(_full(h_recs)) if h_recs and _has_problem(h_recs) else "",
        })
    return rows


def _has_problem(records: Sequence[Record]) -> bool:
    return any(r["status"] in ("failed", "xfailed", "error") for r in records)


def _curve_key(c: Curve) -> Key:
    return suite_key(c["suite"]), c["test"], c["provider"]


def compare_curves(base: Mapping[str, Any], head: Mapping[str, Any]) -> list[CurveChange]:
    """Half-life, failure point and SLA verdicts per curve test × provider, base beside head."""
    b_curves = {_curve_key(c): c for c in base.get("curves", [])}
    out: list[CurveChange] = []
    h_curves = {_curve_key(c): c for c in head.get("curves", [])}
    for key in list(h_curves) + [k for k in b_curves if k not in h_curves]:
        b, h = b_curves.get(key), h_curves.get(key)
        slas: list[SlaChange] = []
        b_sla = {(x["at"], x["min_score"]): x for x in (b["sla"] if b else [])}
        for x in h["sla"] if h else []:
            was = b_sla.get((x["at"], x["min_score"]))
            missed = sla_entry_status(x) == "missed"
            was_missed = was is not None and sla_entry_status(was) == "missed"
            slas.append({"at": x["at"], "min_score": x["min_score"],
                         "base": None if was is None else sla_entry_status(was),
                         "head": sla_entry_status(x),
                         "newly_missed": missed and not was_missed})
        out.append({"suite": key[0], "test": key[1], "provider": key[2],
                    "half_life": [b and b["half_life"], h and h["half_life"]],
                    "failure_point": [b and b["failure_point"], h and h["failure_point"]],
                    "sla": slas})
    return out


def _p95(values: list[float]) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[max(0, math.ceil(0.95 * len(ordered)) - 1)]


def provider_stats(run: Mapping[str, Any]) -> dict[str, ProviderFigures]:
    """Per provider: mean and p95 reply latency (ms), tokens and cost per conversation."""
    by: dict[str, tuple[list[float], list[float], list[float]]] = {}
    for r in run.get("results", []):  # a streamed run's records are read one at a time
        latencies, tokens, costs = by.get(r["provider"]) or by.setdefault(r["provider"], ([], [], []))
        latencies += [float(ms) for m in system_messages(r.get("transcript", [])) if (ms := m.get("latency_ms")) is not None]
        if (t := r.get("tokens")) is not None:
            tokens.append(float(t))
        if (c := r.get("cost")) is not None:
            costs.append(float(c))
    out = {}
    for provider, (latencies, tokens, costs) in by.items():
        out[provider] = {"latency_mean": mean_std(latencies)[0], "latency_p95": _p95(latencies),
                         "tokens": mean_std(tokens)[0], "cost": mean_std(costs)[0]}
    return out


def compare_providers(base: Mapping[str, Any], head: Mapping[str, Any]) -> list[ProviderChange]:
    b, h = provider_stats(base), provider_stats(head)
    rows: list[ProviderChange] = []
    for provider in list(h) + [p for p in b if p not in h]:
        bs, hs = b.get(provider, {}), h.get(provider, {})
        delta = {k: (hs[k] - bs[k]) if hs.get(k) is not None and bs.get(k) is not None else None  # type: ignore[operator]
                 for k in ("latency_mean", "latency_p95", "tokens", "cost")}
        rows.append({"provider": provider, "base": bs or None, "head": hs or None, "delta": delta})
    return rows


def _meta(run: Mapping[str, Any], path: str | None) -> BaseMeta:
    return {"run_id": run.get("run_id"), "started_at": run.get("started_at"), "path": path}


def counts(rows: Sequence[BaselineRow]) -> dict[str, int]:
    return {c: sum(1 for r in rows if r["category"] == c) for c in CATEGORIES}


def blocking_reasons(diff: Baseline | Mapping[str, Any], suite: str | None = None, critical: bool = True,
                     each: bool = True) -> list[str]:
    """What fails a regressions gate (of one suite, or of the whole run); `evalspec diff` leaves out
    critical rules newly failing inside tests that already failed (`critical=False`); under the paired test
    (`each=False`) a regressed test does not block by itself, a critical rule newly failed still does."""
    mine = [r for r in diff["rows"] if suite is None or r["suite"] == suite_key(suite)]
    reasons = [f"{r['category']}: {r['test_id']} @ {r['provider']}" for r in mine if each and r["blocking"]]
    # `flaky` never excuses a critical failure (docs/en/rule-self-tests.md#verdicts-that-hold)
    reasons += [f"critical assertion newly failed: {r['test_id']} @ {r['provider']}"
                for r in mine if critical and r["critical_new"] and not (each and r["blocking"])]
    reasons += [f"SLA newly missed: {c['test']} @ {c['provider']}: at {x['at']} min {x['min_score']}"
                for c in diff["curves"] if suite is None or c["suite"] == suite_key(suite)
                for x in c["sla"] if x["newly_missed"]]
    return reasons


def finish(diff: dict[str, Any]) -> dict[str, Any]:
    """Recount after the rows changed (confirmation replays turn `regressed` into `flaky`)."""
    diff["counts"] = counts(diff["rows"])
    diff["score_changes"] = [{"suite": r["suite"], "test_id": r["test_id"], "provider": r["provider"],
                              "base": r["base"]["score"], "head": r["head"]["score"], "delta": r["score_delta"]}
                             for r in diff["rows"] if r["score_delta"] is not None
                             and abs(r["score_delta"]) >= SCORE_DELTA - 1e-9]
    diff["reasons"] = blocking_reasons(diff)
    diff["exit_code"] = 1 if blocking_reasons(diff, critical=False) else 0
    return diff


def compare_runs(base: RunData | Mapping[str, Any], head: RunData | Mapping[str, Any], base_path: str | None = None,
                 head_path: str | None = None) -> Baseline:
    """The diff of HEAD against BASE (the value of run.json's `baseline` key)."""
    diff: dict[str, Any] = {"available": True, "base": _meta(base, base_path), "head": _meta(head, head_path),
            "rows": compare_verdicts(base, head), "curves": compare_curves(base, head),
            "providers": compare_providers(base, head)}
    return cast(Baseline, finish(diff))  # run.json's `baseline`, as `rundata.Baseline` describes it
