"""The regressions gate (SPEC §10): with a baseline, "no regression" replaces the pass-rate check.

`regressed`, `new failing`, an SLA newly missed or a critical assertion that newly failed exit 1;
failures the baseline already had are shown but do not block; exit 3 for errors still applies.
Without a baseline the usual gate runs, and the run says so.
"""

from __future__ import annotations

from typing import Any

from evalspec.results.compare import blocking_reasons

MODES = ("pass_rate", "regressions")


def no_baseline(note: str) -> dict[str, Any]:
    """run.json's `baseline` value when none could be had."""
    return {"available": False, "note": note}


def suite_mode(suite_meta: dict[str, Any], cli_mode: str | None) -> str:
    return cli_mode or str(suite_meta.get("gate_mode") or "pass_rate")


def apply_baseline(run: dict[str, Any], diff: dict[str, Any], cli_mode: str | None) -> dict[str, Any]:
    """Put the diff into the run and, for suites gated on regressions, replace their gate verdict."""
    run["baseline"] = diff
    gate = run["gate"]
    modes = {s["path"]: suite_mode(s, cli_mode) for s in run["suites"]}
    if "regressions" not in modes.values():
        return run
    if not diff.get("available"):
        gate["mode"] = "pass_rate"
        gate["reasons"] = [*gate["reasons"], f"no baseline ({diff.get('note')}): the usual gate ran"]
        return run
    was_errors = gate["exit_code"] == 3
    for s in gate["suites"]:
        if modes.get(s["suite"]) != "regressions":
            continue
        s["mode"] = "regressions"
        s["reasons"] = blocking_reasons(diff, s["suite"])
        s["ok"] = not s["reasons"]
    reasons = [f"{s['suite']}: {r}" for s in gate["suites"] for r in s["reasons"]]
    errors = was_errors or any(s.get("errors_exceeded") or s.get("sla_no_data") for s in gate["suites"])
    exit_code = 1 if reasons else 3 if errors else 0
    if exit_code == 3:
        reasons += [f"{s['suite']}: {s['errors']} errors > max_errors {s['max_errors']}"
                    for s in gate["suites"] if s.get("errors_exceeded")]
        reasons += [f"{s['suite']}: SLA no data: {x}" for s in gate["suites"] for x in s.get("sla_no_data") or []]
    gate.update({"mode": "regressions", "exit_code": exit_code, "passed": exit_code == 0, "reasons": reasons})
    return run
