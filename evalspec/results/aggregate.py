"""Verdicts, curves, summary and the gate — computed from run.json records alone."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from evalspec.results.attacks import attack_summary
from evalspec.results.verdict import Verdict, combine_repeats, mean_std


def verdicts(records: list[dict[str, Any]]) -> list[Verdict]:
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
        gated = not first.get("draft") and not first.get("xfail") and not is_curve and status != "skipped"
        out.append(Verdict(suite, base_id, first["name"], provider, status, len(recs), ok, rate, hat, mean, std,
                           gated, critical, bool(first.get("draft")), bool(first.get("xfail")), is_curve, idx))
    return out


def curves(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per curve test and provider: mean score per value, half-life, failure point and SLA verdicts."""
    groups: dict[tuple[str, str, str], list[dict[str, Any]]] = defaultdict(list)
    for r in records:
        if r.get("curve"):
            groups[(r["suite"], r["test"], r["provider"])].append(r)
    out = []
    for (suite, test, provider), recs in groups.items():
        var = recs[0]["curve"]
        by_value: dict[str, list[dict[str, Any]]] = {}
        raw_values: dict[str, Any] = {}
        for r in recs:
            v = r["matrix"].get(var)
            by_value.setdefault(str(v), []).append(r)
            raw_values[str(v)] = v
        points = []
        for key, samples in by_value.items():
            scored = [s["score"] for s in samples if s["status"] != "error" and s.get("score") is not None]
            mean, std = mean_std(scored)
            passed = sum(1 for s in samples if s["status"] in ("passed", "xpassed"))
            points.append({"value": raw_values[key], "mean": mean, "std": std, "n": len(samples),
                           "passed": passed, "errors": sum(1 for s in samples if s["status"] == "error")})
        half_life = next((p["value"] for p in points if p["mean"] is not None and p["mean"] < 0.5), None)
        failure = next((p["value"] for p in points if p["passed"] * 2 < p["n"] - p["errors"]), None)
        slas = []
        for sla in recs[0].get("sla") or []:
            covered = [p for p in points if _num(p["value"]) is not None and _num(p["value"]) <= sla["at"]
                       and p["mean"] is not None]
            missed = [p["value"] for p in covered if p["mean"] < sla["min_score"]]
            slas.append({"at": sla["at"], "min_score": sla["min_score"], "passed": bool(covered) and not missed,
                         "missed_at": missed, "no_data": not covered})
        out.append({"suite": suite, "test": test, "name": recs[0]["name"], "provider": provider, "variable": var,
                    "points": points, "half_life": half_life, "failure_point": failure, "sla": slas})
    return out


def _num(v: Any) -> float | None:
    try:
        return float(v)
    except (TypeError, ValueError):
        return None


def gate(suites: list[dict[str, Any]], vs: list[Verdict], curve_list: list[dict[str, Any]],
         fail_under: float | None, include_drafts: bool) -> dict[str, Any]:
    """The gate verdict per suite and for the run; `exit_code` follows SPEC §1."""
    per_suite = []
    all_passed = all_failed = 0
    any_fail = any_errors = False
    for s in suites:
        mine = [v for v in vs if v.suite == s["path"]]
        gated = [v for v in mine if (v.gated or (include_drafts and v.draft and not v.xfail and not v.curve))]
        passed = sum(1 for v in gated if v.status == "passed")
        failed = sum(1 for v in gated if v.status == "failed")
        errors = sum(1 for v in mine if v.status == "error" and (include_drafts or not v.draft))
        rate = passed / (passed + failed) if passed + failed else 1.0
        min_rate = fail_under if fail_under is not None else s["min_pass_rate"]
        critical = [v.test_id + " @ " + v.provider for v in gated if v.status == "failed" and v.critical_failed]
        sla_missed = [f"{c['test']} @ {c['provider']}: at {x['at']} min {x['min_score']}"
                      for c in curve_list if c["suite"] == s["path"] for x in c["sla"] if not x["passed"] and not x["no_data"]]
        reasons = []
        if rate < min_rate:
            reasons.append(f"pass rate {rate:.2%} < {min_rate:.2%}")
        if critical:
            reasons.append("critical assertion failed: " + ", ".join(critical))
        if sla_missed:
            reasons.append("SLA missed: " + "; ".join(sla_missed))
        too_many_errors = errors > s["max_errors"]
        per_suite.append({"suite": s["path"], "passed": passed, "failed": failed, "errors": errors,
                          "pass_rate": rate, "min_pass_rate": min_rate, "max_errors": s["max_errors"],
                          "ok": not reasons, "reasons": reasons, "errors_exceeded": too_many_errors})
        all_passed, all_failed = all_passed + passed, all_failed + failed
        any_fail = any_fail or bool(reasons)
        any_errors = any_errors or too_many_errors
    overall = all_passed / (all_passed + all_failed) if all_passed + all_failed else 1.0
    reasons = [f"{p['suite']}: {r}" for p in per_suite for r in p["reasons"]]
    if fail_under is not None and overall < fail_under:
        any_fail = True
        reasons.append(f"run pass rate {overall:.2%} < --fail-under {fail_under:.2%}")
    exit_code = 1 if any_fail else 3 if any_errors else 0
    if exit_code == 3:
        reasons.extend(f"{p['suite']}: {p['errors']} errors > max_errors {p['max_errors']}"
                       for p in per_suite if p["errors_exceeded"])
    return {"passed": exit_code == 0, "exit_code": exit_code, "pass_rate": overall, "fail_under": fail_under,
            "include_drafts": include_drafts, "reasons": reasons, "suites": per_suite}


def summary(records: list[dict[str, Any]], vs: list[Verdict]) -> dict[str, Any]:
    counts = {s: 0 for s in ("passed", "failed", "error", "skipped", "xfailed", "xpassed")}
    for r in records:
        counts[r["status"]] += 1
    vcounts = {s: 0 for s in counts}
    for v in vs:
        vcounts[v.status] += 1
    return {
        "records": len(records), "by_status": counts, "verdicts": len(vs), "verdicts_by_status": vcounts,
        "calls": sum(r.get("calls", 0) for r in records),
        "cached_calls": sum(r.get("cached_calls", 0) for r in records),
        "tokens": sum(r.get("tokens") or 0 for r in records),
        "cost": round(sum(r.get("cost") or 0.0 for r in records), 6),
        "strategy_calls": sum(r.get("strategy_calls") or 0 for r in records),
        "strategy_tokens": sum(r.get("strategy_tokens") or 0 for r in records),
        "strategy_cost": round(sum(r.get("strategy_cost") or 0.0 for r in records), 6),
        "judge_calls": sum(r.get("judge_calls") or 0 for r in records),
        "judge_cost": round(sum(r.get("judge_cost") or 0.0 for r in records), 6),
    }


def finalize(run: dict[str, Any], fail_under: float | None, include_drafts: bool) -> dict[str, Any]:
    """Fill `verdicts`, `curves`, `summary` and `gate` of a run from its records."""
    records = run["results"]
    vs = verdicts(records)
    cs = curves(records)
    run["verdicts"] = [v.to_json() for v in vs]
    run["curves"] = cs
    run["summary"] = summary(records, vs)
    run["gate"] = gate(run["suites"], vs, cs, fail_under, include_drafts)
    if attacks := attack_summary(records):
        run["summary"]["attacks"] = attacks
    return run
