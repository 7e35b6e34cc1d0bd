"""Verdicts, curves, summary and the gate — computed from run.json records alone."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from evalspec.results.attacks import attack_summary
from evalspec.results.curves import binding_point, covered_points, curves, sla_entry_status
from evalspec.results.verdict import CATEGORIES, Verdict, category, combine_repeats, mean_std


def verdicts(records: list[dict[str, Any]], include_drafts: bool = False) -> list[Verdict]:
    """One verdict per test instance × provider, repeats combined by the test's pass rule."""
    groups: dict[tuple[str, str, str], list[int]] = defaultdict(list)
    for i, r in enumerate(records):
        groups[(r["suite"], r["base_id"], r["provider"])].append(i)
    out = []
    for (suite, base_id, provider), idx in groups.items():
        recs = [records[i] for i in idx]
        first = recs[0]
        status, ok, rate, hat = combine_repeats(recs, first.get("repeat_rule", "all"))
        mean, std = mean_std([r["score"] for r in recs if r.get("score") is not None and r["status"] != "error"])
        critical = status in ("failed",) and any(r.get("critical_failed") for r in recs)
        is_curve = bool(first.get("curve"))
        draft = bool(first.get("draft"))
        gated = not draft and not first.get("xfail") and not is_curve and status != "skipped"
        out.append(Verdict(suite, base_id, first["name"], provider, status, len(recs), ok, rate, hat, mean, std,
                           gated, critical, draft, bool(first.get("xfail")), is_curve, idx,
                           category(status, is_curve, draft, include_drafts)))
    return out


def sla_verdicts(curve_list: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One verdict per curve test × provider with an `sla`: met only when every entry holds."""
    out = []
    for c in curve_list:
        if not c["sla"]:
            continue
        entries = [{**x, "text": sla_text(c, x)} for x in c["sla"]]
        statuses = {sla_entry_status(x) for x in c["sla"]}
        status = next(s for s in ("missed", "no data", "met") if s in statuses)
        out.append({"id": f"sla: {c['test']} @ {c['provider']}", "suite": c["suite"], "test": c["test"],
                    "name": c["name"], "provider": c["provider"], "variable": c["variable"], "status": status,
                    "entries": entries, "text": "; ".join(x["text"] for x in entries)})
    return out


def sla_text(curve: dict[str, Any], sla: dict[str, Any]) -> str:
    """The measured value beside the target: `at 5: 0.67 < 0.80` for each point below it (missed), or the
    point the SLA is measured by (met)."""
    target = sla["min_score"]
    covered = covered_points(curve["points"], sla["at"])
    if sla_entry_status(sla) == "missed":
        return "; ".join(f"at {p['value']}: {p['mean']:.2f} < {target:.2f}" for p in covered if p["mean"] < target)
    if unscored := sla.get("unscored_at"):
        return (f"no scored sample at {', '.join(str(v) for v in unscored)}: every sample errored "
                f"(target ≥ {target:.2f})")
    if sla["no_data"] or not covered:
        return f"no measured point at or below {sla['at']:g} (target ≥ {target:.2f})"
    low = binding_point(covered)
    return f"at {low['value']}: {low['mean']:.2f} ≥ {target:.2f}"


def counts(vs: list[Verdict], slas: list[dict[str, Any]]) -> dict[str, int]:
    """The verdict counts every report shows, in one vocabulary."""
    out = {c: 0 for c in CATEGORIES}
    for v in vs:
        out[v.category] += 1
    out["slas_missed"] = sum(1 for s in slas if s["status"] == "missed")
    return out


def gate(suites: list[dict[str, Any]], vs: list[Verdict], curve_list: list[dict[str, Any]],
         fail_under: float | None, include_drafts: bool) -> dict[str, Any]:
    """The gate verdict per suite and for the run; `exit_code` follows SPEC §1 and §8.

    A pass rate over no gated verdict is None (shown "—"), never 100%."""
    per_suite = []
    all_passed = all_failed = all_errors = 0
    any_fail = any_errors = False
    slas = sla_verdicts(curve_list)
    for s in suites:
        mine = [v for v in vs if v.suite == s["path"]]
        gated = [v for v in mine if (v.gated or (include_drafts and v.draft and not v.xfail and not v.curve))]
        passed = sum(1 for v in gated if v.status == "passed")
        failed = sum(1 for v in gated if v.status == "failed")
        errors = sum(1 for v in mine if v.status == "error" and (include_drafts or not v.draft))
        rate = passed / (passed + failed) if passed + failed else None
        min_rate = fail_under if fail_under is not None else s["min_pass_rate"]
        # a critical failure gates wherever it happens: curve points and xfail tests included, never drafts
        critical = [v.test_id + " @ " + v.provider for v in mine
                    if v.status == "failed" and v.critical_failed and (include_drafts or not v.draft)]
        sla_missed = [f"{x['id']}: {x['text']}" for x in slas if x["suite"] == s["path"] and x["status"] == "missed"]
        reasons = []
        if rate is not None and rate < min_rate:
            reasons.append(f"pass rate {rate:.2%} < {min_rate:.2%}")
        if critical:
            reasons.append("critical assertion failed: " + ", ".join(critical))
        if sla_missed:
            reasons.append("SLA missed: " + "; ".join(sla_missed))
        # SPEC §17: an SLA without data gates like an error (exit 3 unless something failed)
        no_data = [f"{x['id']}: {x['text']}" for x in slas if x["suite"] == s["path"] and x["status"] == "no data"]
        too_many_errors = errors > s["max_errors"]
        per_suite.append({"suite": s["path"], "passed": passed, "failed": failed, "errors": errors,
                          "pass_rate": rate, "min_pass_rate": min_rate, "max_errors": s["max_errors"],
                          "ok": not reasons, "reasons": reasons, "errors_exceeded": too_many_errors,
                          "sla_no_data": no_data,
                          "counts": counts(mine, [x for x in slas if x["suite"] == s["path"]])})
        all_passed, all_failed, all_errors = all_passed + passed, all_failed + failed, all_errors + errors
        any_fail = any_fail or bool(reasons)
        any_errors = any_errors or too_many_errors or bool(no_data)
    overall = all_passed / (all_passed + all_failed) if all_passed + all_failed else None
    reasons = [f"{p['suite']}: {r}" for p in per_suite for r in p["reasons"]]
    if fail_under is not None and overall is not None and overall < fail_under:
        any_fail = True
        reasons.append(f"run pass rate {overall:.2%} < --fail-under {fail_under:.2%}")
    no_verdict = overall is None and all_errors > 0  # SPEC §8: whatever max_errors says
    exit_code = 1 if any_fail else 3 if any_errors or no_verdict else 0
    if exit_code == 3:
        reasons.extend(f"{p['suite']}: {p['errors']} errors > max_errors {p['max_errors']}"
                       for p in per_suite if p["errors_exceeded"])
        reasons.extend(f"{p['suite']}: SLA no data: {x}" for p in per_suite for x in p["sla_no_data"])
        if no_verdict:
            reasons.append(f"no gated verdict was reached: {all_errors} error{'s' if all_errors != 1 else ''}")
    return {"passed": exit_code == 0, "exit_code": exit_code, "pass_rate": overall, "fail_under": fail_under,
            "include_drafts": include_drafts, "reasons": reasons, "suites": per_suite}


def metrics(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The `metric:` scoreboard per suite × provider × metric: the mean score of its checks, and how many
    verdicts (test instance × provider, repeats combined by the test's rule) passed every check of that
    metric, out of those that reached a verdict on it — counted like every other summary figure (SPEC §9)."""
    scores: dict[tuple[str, str, str], list[float]] = defaultdict(list)
    repeats: dict[tuple[str, str, str], dict[str, list[dict[str, Any]]]] = defaultdict(dict)
    for r in records:
        mine: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for a in r.get("assertions", []):
            if a.get("metric"):
                mine[str(a["metric"])].append(a)
        for metric, checks in mine.items():
            key = (r["suite"], r["provider"], metric)
            scores[key] += [a["score"] for a in checks if a.get("score") is not None]
            status = ("error" if any(a.get("error") or a.get("pass") is None for a in checks)
                      else "passed" if all(a.get("pass") for a in checks) else "failed")
            repeats[key].setdefault(r["base_id"], []).append({"status": status, "rule": r.get("repeat_rule", "all")})
    out = []
    for key, by_test in repeats.items():
        decided = [combine_repeats(recs, recs[0]["rule"])[0] for recs in by_test.values()]
        values = scores[key]
        out.append({"suite": key[0], "provider": key[1], "metric": key[2],
                    "mean": round(sum(values) / len(values), 6) if values else None,
                    "passed": decided.count("passed"), "total": sum(1 for d in decided if d != "error")})
    return out


def summary(records: list[dict[str, Any]], vs: list[Verdict], slas: list[dict[str, Any]]) -> dict[str, Any]:
    by_status = {s: 0 for s in ("passed", "failed", "error", "skipped", "xfailed", "xpassed")}
    for r in records:
        by_status[r["status"]] += 1
    return {
        **counts(vs, slas),
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
        **judge_totals(records),
        "rate_limited": rate_limited(records),
        "metrics": metrics(records),
    }


def judge_totals(parts: Iterable[dict[str, Any]], into: dict[str, Any] | None = None) -> dict[str, Any]:
    """The summary's `judge_calls`, `judge_tokens` and `judge_cost`: those of `parts` (records, second-opinion
    items), added to the figures already `into` a summary when given (SPEC §17)."""
    base = into or {}
    calls, tokens, cost = int(base.get("judge_calls") or 0), int(base.get("judge_tokens") or 0), \
        float(base.get("judge_cost") or 0.0)
    for p in parts:
        calls += int(p.get("judge_calls") or 0)
        tokens += int(p.get("judge_tokens") or 0)
        cost += float(p.get("judge_cost") or 0.0)
    return {"judge_calls": calls, "judge_tokens": tokens, "judge_cost": round(cost, 6)}


def rate_limited(records: list[dict[str, Any]]) -> dict[str, int]:
    """The 429/503 answers of the run, by provider id (SPEC §23): each conversation's, its judge's included."""
    total: dict[str, int] = {}
    for r in records:
        for provider, n in (r.get("rate_limited") or {}).items():
            total[provider] = total.get(provider, 0) + int(n)
    return total


def finalize(run: dict[str, Any], fail_under: float | None, include_drafts: bool) -> dict[str, Any]:
    """Fill `verdicts`, `curves`, `summary` and `gate` of a run from its records."""
    records = run["results"]
    vs = verdicts(records, include_drafts)
    cs = curves(records)
    run["verdicts"] = [v.to_json() for v in vs]
    run["curves"] = cs
    run["slas"] = sla_verdicts(cs)
    run["summary"] = summary(records, vs, run["slas"])
    if review := run.get("judge_review"):  # the second opinion's calls are the run's, not a record's
        run["summary"].update(judge_totals(review.get("items") or [], run["summary"]))
    run["gate"] = gate(run["suites"], vs, cs, fail_under, include_drafts)
    if attacks := attack_summary(records):
        run["summary"]["attacks"] = attacks
    if warnings := path_warnings(records):
        run["summary"]["warnings"] = warnings
    return run


def path_warnings(records: list[dict[str, Any]]) -> list[str]:
    """One warning per http `tool_calls:` path whose key was in no turn of the run (a typo reads as "no calls")."""
    found: dict[tuple[str, str], bool] = {}
    for record in records:
        for path, hit in (record.get("tool_calls_paths") or {}).items():
            key = (str(record["provider"]), str(path))
            found[key] = found.get(key, False) or bool(hit)
    return [f"provider '{provider}': tool_calls path '{path}' never matched: check the path"
            for (provider, path), hit in found.items() if not hit]
