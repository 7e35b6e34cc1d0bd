"""Verdicts, curves, summary and the gate (decided by results/gate.py) — computed from run.json records alone."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypedDict, cast

from evalspec.results import verdict as reduction  # docs/en/recorded-conversations.md `reduce:`
from evalspec.results.agreement import jury_summary
from evalspec.results.attacks import attack_summary
from evalspec.results.curves import binding_point, covered_points, curves, sla_entry_status
from evalspec.results.errorbars import interval, red_lines, run_figures
from evalspec.results.gate import decide
from evalspec.results.pairwise import pairwise_summary
from evalspec.results.rundata import Curve, CurveSla, Metric, Record, RunVerdict, Sla, StatusName, Summary
from evalspec.results.spread import simulator_spread
from evalspec.results.stream import JournalRecords
from evalspec.results.verdict import Verdict, category, combine_repeats, counts, is_gated, mean_std

if TYPE_CHECKING:
    from evalspec.results.corrected import Corrections


class Repeat(TypedDict):
    """One repeat's outcome on a metric's checks, combined as the test's repeats are (`combine_repeats`)."""

    status: StatusName
    rule: str | float


class JudgeTotals(TypedDict):
    judge_calls: int
    judge_tokens: int
    judge_cost: float


def verdicts(records: Sequence[Record], include_drafts: bool = False) -> list[Verdict]:
    """One verdict per test instance × provider, repeats combined by the test's pass rule."""
    groups: dict[tuple[str, str, str], list[int]] = defaultdict(list)
    for i, r in enumerate(records):
        groups[(r["suite"], r["base_id"], r["provider"])].append(i)
    out = []
    for (suite, base_id, provider), idx in groups.items():
        recs = [records[i] for i in idx]
        first = recs[0]
        status, ok, rate, hat = combine_repeats(recs, first.get("repeat_rule", "all"))
        mean, std = mean_std([s for r in recs if (s := r.get("score")) is not None and r["status"] != "error"])
        critical = status in ("failed",) and any(r.get("critical_failed") for r in recs)
        is_curve = bool(first.get("curve"))
        draft = bool(first.get("draft"))
        gated = is_gated({"status": status, "draft": draft, "xfail": first.get("xfail"), "curve": is_curve})
        # the words a million verdicts share are held once (records read back from disk each bring their own)
        simulator = first.get("simulator")
        out.append(Verdict(_shared(suite), base_id, _shared(first["name"]), _shared(provider), status, len(recs),
                           ok, rate, hat, mean, std, gated, critical, draft, bool(first.get("xfail")), is_curve, idx,
                           category(status, is_curve, draft, include_drafts),
                           simulator=_shared(simulator) if isinstance(simulator, str) else simulator))
    return reduction.reduce_instances(out, records, include_drafts)


_WORDS: dict[str, str] = {}
_WORDS_MOST = 10_000


def _shared(text: str) -> str:
    """One str for equal suite paths, test names and provider ids (at most `_WORDS_MOST` of them)."""
    return _WORDS.setdefault(text, text) if len(_WORDS) < _WORDS_MOST else _WORDS.get(text, text)


def sla_verdicts(curve_list: list[Curve]) -> list[Sla]:
    """One verdict per curve test × provider with an `sla`: met only when every entry holds."""
    out: list[Sla] = []
    for c in curve_list:
        if not c["sla"]:
            continue
        entries: list[CurveSla] = [{**x, "text": sla_text(c, x)} for x in c["sla"]]
        statuses = {sla_entry_status(x) for x in c["sla"]}
        status = next(s for s in ("missed", "no data", "met") if s in statuses)
        out.append({"id": f"sla: {c['test']} @ {c['provider']}", "suite": c["suite"], "test": c["test"],
                    "name": c.get("name", ""), "provider": c["provider"], "variable": c["variable"], "status": status,
                    "entries": entries, "text": "; ".join(x["text"] for x in entries)})
    return out


def sla_text(curve: Curve | Mapping[str, Any], sla: CurveSla) -> str:
    """The measured value beside the target: `at 5: 0.67 < 0.80` for each point below it (missed), or the
    point the SLA is measured by (met)."""
    target = sla["min_score"]
    covered = covered_points(curve["points"], sla["at"])
    if sla_entry_status(sla) == "missed":
        return "; ".join(f"at {p['value']}: {mean:.2f} < {target:.2f}" for p in covered
                         if (mean := p["mean"]) is not None and mean < target)
    if unscored := sla.get("unscored_at"):
        return (f"no scored sample at {', '.join(str(v) for v in unscored)}: every sample errored "
                f"(target ≥ {target:.2f})")
    if sla["no_data"] or not covered:
        return f"no measured point at or below {sla['at']:g} (target ≥ {target:.2f})"
    low = binding_point(covered)
    return f"at {low['value']}: {low['mean']:.2f} ≥ {target:.2f}"


def metrics(records: Sequence[Record]) -> list[Metric]:
    """The `metric:` scoreboard per suite × provider × metric: the mean score of its checks, and how many
    verdicts (test instance × provider, repeats combined by the test's rule) passed every check of that
    metric, out of those that reached a verdict on it — counted like every other summary figure (docs/en/reports-and-gate.md#outputs)."""
    scores: dict[tuple[str, str, str], list[float]] = defaultdict(list)
    repeats: dict[tuple[str, str, str], dict[str, list[Repeat]]] = defaultdict(dict)
    for r in records:
        mine: dict[str, list[dict[str, Any]]] = defaultdict(list)  # a record's checks by metric
        for a in r.get("assertions", []):
            if a.get("metric") and not a.get("skipped"):  # a skipped check examined nothing
                mine[str(a["metric"])].append(a)
        for metric, checks in mine.items():
            key = (r["suite"], r["provider"], metric)
            scores[key] += [a["score"] for a in checks if a.get("score") is not None]
            status: StatusName = ("failed" if any(a.get("pass") is False for a in checks)  # a failure beside an error
                      else "error" if any(a.get("error") or a.get("pass") is None for a in checks) else "passed")
            repeats[key].setdefault(reduction.verdict_key(r), []).append({"status": status, "rule": r.get("repeat_rule", "all")})
    out: list[Metric] = []
    for key, by_test in repeats.items():
        decided = [combine_repeats(recs, recs[0]["rule"])[0] for recs in by_test.values()]
        values = scores[key]
        passed, total = decided.count("passed"), sum(1 for d in decided if d != "error")
        out.append({"suite": key[0], "provider": key[1], "metric": key[2],
                    "mean": round(sum(values) / len(values), 6) if values else None,
                    "passed": passed, "total": total, "pass_rate_ci": interval(passed, total)})
    return out


def summary(records: Sequence[Record], vs: list[Verdict], slas: list[Sla]) -> Summary:
    by_status = {s: 0 for s in ("passed", "failed", "error", "skipped", "xfailed", "xpassed")}
    for r in records:
        by_status[r["status"]] += 1
    c = counts(vs, slas)  # the verdict counts, in the words every report uses
    judge = judge_totals(records)
    return {
        "passed": c["passed"], "failed": c["failed"], "error": c["error"], "xfailed": c["xfailed"],
        "xpassed": c["xpassed"], "measured": c["measured"], "drafts": c["drafts"], "skipped": c["skipped"],
        "slas_missed": c["slas_missed"],
        "records": len(records), "by_status": by_status, "verdicts": len(vs),
        "calls": sum(r.get("calls", 0) for r in records),
        "cached_calls": sum(r.get("cached_calls", 0) for r in records),
        "failed_calls": sum(r.get("failed_calls", 0) for r in records),
        "retries": sum(r.get("retries", 0) for r in records),
        "tokens": sum(r.get("tokens") or 0 for r in records),
        "cost": round(sum(r.get("cost") or 0.0 for r in records), 6),
        "strategy_calls": sum(r.get("strategy_calls") or 0 for r in records),
        "strategy_tokens": sum(r.get("strategy_tokens") or 0 for r in records),
        "strategy_cost": round(sum(r.get("strategy_cost") or 0.0 for r in records), 6),
        "judge_calls": judge["judge_calls"], "judge_tokens": judge["judge_tokens"], "judge_cost": judge["judge_cost"],
        "rate_limited": rate_limited(records),
        "metrics": metrics(records),
    }


def judge_totals(parts: Iterable[Mapping[str, Any]], into: Mapping[str, Any] | None = None) -> JudgeTotals:
    """The summary's `judge_calls`, `judge_tokens` and `judge_cost`: those of `parts` (records, second-opinion
    items), added to the figures already `into` a summary when given (docs/en/rule-self-tests.md#verdicts-that-hold)."""
    base = into or {}
    calls, tokens, cost = int(base.get("judge_calls") or 0), int(base.get("judge_tokens") or 0), \
        float(base.get("judge_cost") or 0.0)
    for p in parts:
        calls += int(p.get("judge_calls") or 0)
        tokens += int(p.get("judge_tokens") or 0)
        cost += float(p.get("judge_cost") or 0.0)
    return {"judge_calls": calls, "judge_tokens": tokens, "judge_cost": round(cost, 6)}


def rate_limited(records: Sequence[Record]) -> dict[str, int]:
    """The 429/503 answers of the run, by provider id (docs/en/rate-limits.md): each conversation's, its judge's included."""
    total: dict[str, int] = {}
    for r in records:
        for provider, n in (r.get("rate_limited") or {}).items():
            total[provider] = total.get(provider, 0) + int(n)
    return total


def finalize(run: dict[str, Any], fail_under: float | None, include_drafts: bool,
             corrected: Corrections | None = None) -> dict[str, Any]:
    """Fill `verdicts`, `curves`, `summary` and `gate` of a run from its records (the light forms of
    records read back from disk: what the aggregates read); `corrected`: what the labels say of its judged
    rules, read from the whole records (results/corrected.py), for `summary.corrected` and the corrected gate."""
    records: Sequence[Record] = run["results"]
    if isinstance(records, JournalRecords) and records.light is not None:
        records = cast(list[Record], records.light)  # Records without their heavy keys (`stream.light`)
    vs = verdicts(records, include_drafts)
    cs = curves(records)
    run["verdicts"] = []  # filled last, as `vs` is let go (`verdicts_json`): never both whole in memory
    run["curves"] = cs
    run["slas"] = sla_verdicts(cs)
    run["summary"] = summary(records, vs, run["slas"])
    run["summary"].update(run_figures(run["suites"], vs, include_drafts))  # docs/en/statistics.md
    run["summary"]["red_lines"] = red_lines(records, include_drafts)
    if review := run.get("judge_review"):  # the second opinion's calls are the run's, not a record's
        run["summary"].update(judge_totals(review.get("items") or [], run["summary"]))
    if corrected is not None and corrected.rules:  # docs/en/judges.md#labels-flow-back
        run["summary"]["corrected"] = corrected.rules
    run["gate"] = decide(run["suites"], vs, run["slas"], fail_under, include_drafts, run["summary"]["suites"],
                         run["summary"]["red_lines"], corrected.suites if corrected is not None else None).to_json()
    if juries := jury_summary(records):  # docs/en/judges.md#juries
        run["summary"]["juries"] = juries
    if pairwise := pairwise_summary(records):  # docs/en/judges.md#comparing-two-bot-versions-pairwise
        run["summary"]["pairwise"] = pairwise
    if attacks := attack_summary(records):
        run["summary"]["attacks"] = attacks
    if spread := simulator_spread(vs, include_drafts):  # docs/en/agents.md#comparing-two-simulators
        run["summary"]["simulator_spread"] = spread
    if warnings := path_warnings(records):
        run["summary"]["warnings"] = warnings
    run["verdicts"] = verdicts_json(vs)
    return run


def verdicts_json(vs: list[Verdict]) -> list[RunVerdict]:
    """run.json's `verdicts`, in order, each `Verdict` let go as its JSON form is made (`vs` ends empty)."""
    vs.reverse()
    out: list[RunVerdict] = []
    while vs:
        out.append(vs.pop().to_json())
    return out


def path_warnings(records: Sequence[Record]) -> list[str]:
    """One warning per http `tool_calls:` path whose key was in no turn of the run (a typo reads as "no calls")."""
    found: dict[tuple[str, str], bool] = {}
    for record in records:
        for path, hit in (record.get("tool_calls_paths") or {}).items():
            key = (str(record["provider"]), str(path))
            found[key] = found.get(key, False) or bool(hit)
    return [f"provider '{provider}': tool_calls path '{path}' never matched: check the path"
            for (provider, path), hit in found.items() if not hit]
