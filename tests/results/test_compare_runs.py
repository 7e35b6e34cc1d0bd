"""Every diff category, score deltas, curves and per-provider figures, from two runs' records."""

from __future__ import annotations

from typing import Any

import pytest

from evalspec.results.compare import CATEGORIES, compare_runs, suite_key
from tests.results.helpers import rec, run


def row(diff: dict[str, Any], test_id: str) -> dict[str, Any]:
    return next(r for r in diff["rows"] if r["test_id"] == test_id)


@pytest.mark.parametrize(("base", "head", "expected"), [
    ("passed", "failed", "regressed"),
    ("failed", "passed", "fixed"),
    ("failed", "failed", "still failing"),
    ("passed", "passed", "unchanged"),
    ("passed", "error", "new error"),
    ("failed", "error", "new error"),
    ("error", "passed", "recovered"),
    ("error", "failed", "failing, no baseline verdict"),
    (None, "failed", "new failing"),
    (None, "passed", "new"),
    ("passed", None, "removed"),
    ("xfailed", "xfailed", "still failing"),
])
def test_each_pair_of_statuses_falls_in_its_category(base: str | None, head: str | None, expected: str) -> None:
    b = run(rec("t", base)) if base else run(rec("other", "passed"))
    h = run(rec("t", head)) if head else run(rec("other", "passed"))
    diff = compare_runs(b, h)
    assert row(diff, "t")["category"] == expected
    assert diff["counts"][expected] >= 1


def test_only_regressed_and_new_failing_block_and_set_exit_1() -> None:
    blocking = compare_runs(run(rec("a", "passed")), run(rec("a", "failed")))
    assert blocking["exit_code"] == 1 and row(blocking, "a")["blocking"]
    new_failing = compare_runs(run(rec("a", "passed")), run(rec("a", "passed"), rec("b", "failed")))
    assert new_failing["exit_code"] == 1 and new_failing["reasons"] == ["new failing: b @ bot"]
    calm = compare_runs(run(rec("a", "failed"), rec("b", "passed"), rec("c", "error")),
                        run(rec("a", "failed"), rec("b", "error"), rec("c", "passed"), rec("d", "passed")))
    assert calm["exit_code"] == 0 and calm["reasons"] == []


def test_drafts_xfail_and_measured_points_are_compared_but_never_block() -> None:
    base = run(rec("d", "passed", draft=True), rec("x", "xpassed", xfail="known"),
               rec("c[n=5]", "passed", curve="n"))
    head = run(rec("d", "failed", draft=True), rec("x", "xfailed", xfail="known"),
               rec("c[n=5]", "failed", curve="n"))
    diff = compare_runs(base, head)
    assert [r["category"] for r in diff["rows"]] == ["regressed", "regressed", "regressed"]
    assert not any(r["blocking"] for r in diff["rows"]) and diff["exit_code"] == 0
    assert row(diff, "d")["draft"] and row(diff, "c[n=5]")["measured"]


def test_repeats_of_both_runs_are_combined_by_heads_pass_rule() -> None:
    # the baseline ran with rule 'all' (1 of 3 passing: failed); HEAD says 'any': both sides pass
    base = run(*(rec("t", s, repeat=i + 1, n=3, rule="all") for i, s in enumerate(["failed", "passed", "failed"])))
    head = run(*(rec("t", s, repeat=i + 1, n=3, rule="any") for i, s in enumerate(["passed", "failed", "failed"])))
    diff = compare_runs(base, head)
    assert row(diff, "t")["category"] == "unchanged"
    assert row(diff, "t")["base"]["status"] == "passed" and row(diff, "t")["head"]["n"] == 3


def test_verdicts_match_by_suite_and_provider_too() -> None:
    base = run(rec("t", "passed", provider="a"), rec("t", "passed", provider="b", suite="suites/b.yaml"))
    head = run(rec("t", "failed", provider="a"), rec("t", "passed", provider="b", suite="./suites/b.yaml"))
    diff = compare_runs(base, head)
    cats = {(r["suite"], r["provider"]): r["category"] for r in diff["rows"]}
    assert cats == {("suites/a.yaml", "a"): "regressed", ("suites/b.yaml", "b"): "unchanged"}


def test_an_absolute_suite_path_matches_its_relative_form(in_tmp: Any) -> None:
    assert suite_key(str(in_tmp / "suites" / "a.yaml")) == "suites/a.yaml"


def test_score_changes_of_at_least_005_are_listed_with_their_delta() -> None:
    base = run(rec("big", "passed", score=0.9), rec("small", "passed", score=0.9), rec("edge", "passed", score=0.80))
    head = run(rec("big", "passed", score=0.6), rec("small", "passed", score=0.93), rec("edge", "passed", score=0.85))
    changes = {c["test_id"]: c["delta"] for c in compare_runs(base, head)["score_changes"]}
    assert set(changes) == {"big", "edge"}
    assert changes["big"] == pytest.approx(-0.3)


def test_a_newly_failed_critical_rule_is_flagged_for_the_regressions_gate() -> None:
    diff = compare_runs(run(rec("t", "failed")), run(rec("t", "failed", critical_failed=True)))
    assert row(diff, "t")["critical_new"] and row(diff, "t")["category"] == "still failing"
    assert diff["reasons"] == ["critical assertion newly failed: t @ bot"]
    assert diff["exit_code"] == 0  # `evalspec diff` exits 1 for regressions and SLAs only


def curve(half_life: Any, failure: Any, sla_passed: bool) -> dict[str, Any]:
    return {"suite": "suites/a.yaml", "test": "decay", "provider": "bot", "half_life": half_life,
            "failure_point": failure, "sla": [{"at": 5, "min_score": 0.8, "passed": sla_passed, "missed_at": [],
                                               "no_data": False}]}


def test_curve_half_life_failure_point_and_a_newly_missed_sla() -> None:
    diff = compare_runs(run(curves=[curve(20, 30, True)]), run(curves=[curve(10, 15, False)]))
    (c,) = diff["curves"]
    assert c["half_life"] == [20, 10] and c["failure_point"] == [30, 15]
    assert c["sla"][0] == {"at": 5, "min_score": 0.8, "base": "met", "head": "missed", "newly_missed": True}
    assert diff["exit_code"] == 1 and diff["reasons"][0].startswith("SLA newly missed: decay @ bot")
    again = compare_runs(run(curves=[curve(10, 15, False)]), run(curves=[curve(10, 15, False)]))
    assert again["exit_code"] == 0  # missed before: known, not blocking


def test_per_provider_latency_tokens_and_cost_with_deltas() -> None:
    def talk(*latencies: float) -> list[dict[str, Any]]:
        return [{"role": "assistant", "content": "x", "latency_ms": v} for v in latencies]

    base = run(rec("a", "passed", transcript=talk(100, 100), tokens=10, cost=0.01),
               rec("b", "passed", transcript=talk(100, 100), tokens=30, cost=0.03))
    head = run(rec("a", "passed", transcript=talk(100, 200), tokens=20, cost=0.02),
               rec("b", "passed", transcript=talk(300, 1000), tokens=40, cost=0.04))
    (p,) = compare_runs(base, head)["providers"]
    assert p["head"]["latency_mean"] == pytest.approx(400) and p["head"]["latency_p95"] == 1000
    assert p["delta"]["latency_mean"] == pytest.approx(300) and p["delta"]["tokens"] == pytest.approx(10)
    assert p["delta"]["cost"] == pytest.approx(0.01)


def test_categories_are_the_ten_of_the_spec() -> None:
    assert set(CATEGORIES) == {"regressed", "fixed", "still failing", "unchanged", "new error", "recovered",
                               "new failing", "new", "removed", "flaky", "failing, no baseline verdict"}


def red_line(pattern: str, turn: int = 1) -> dict[str, Any]:
    return {"type": "not-regex", "scope": "turn", "pass": False, "score": 0.0, "severity": "critical",
            "turn": turn, "value": pattern, "reason": "matched", "evidence": [], "error": None}


def test_a_critical_rule_newly_failing_in_an_already_failing_test_gates() -> None:
    base = run(rec("t", "failed", critical_failed=True, assertions=[red_line("phone")]))
    head = run(rec("t", "failed", critical_failed=True, assertions=[red_line("phone"), red_line("price", 2)]))
    diff = compare_runs(base, head)
    assert row(diff, "t")["category"] == "still failing" and row(diff, "t")["critical_new"]
    assert diff["reasons"] == ["critical assertion newly failed: t @ bot"]


def test_a_critical_rule_that_also_failed_in_the_base_is_shown_and_does_not_gate() -> None:
    base = run(rec("t", "failed", critical_failed=True, assertions=[red_line("phone")]))
    head = run(rec("t", "failed", critical_failed=True, assertions=[red_line("phone")]))
    diff = compare_runs(base, head)
    assert not row(diff, "t")["critical_new"] and diff["reasons"] == []


def test_a_critical_failure_on_a_curve_point_or_an_xfail_test_gates_a_draft_never() -> None:
    heads = [rec("c", "failed", curve="distance", critical_failed=True, assertions=[red_line("phone")]),
             rec("x", "failed", xfail="bug", critical_failed=True, assertions=[red_line("phone")]),
             rec("d", "failed", draft=True, critical_failed=True, assertions=[red_line("phone")])]
    bases = [rec(t, "passed", curve="distance" if t == "c" else None) for t in ("c", "x", "d")]
    diff = compare_runs(run(*bases), run(*heads))
    assert [r["test_id"] for r in diff["rows"] if r["critical_new"]] == ["c", "x"]


def test_a_head_failure_after_a_base_error_has_no_baseline_verdict_and_gates() -> None:
    diff = compare_runs(run(rec("t", "error")), run(rec("t", "failed")))
    assert row(diff, "t")["category"] == "failing, no baseline verdict" and row(diff, "t")["blocking"]
    assert diff["exit_code"] == 1
    assert compare_runs(run(rec("t", "error")), run(rec("t", "passed")))["rows"][0]["category"] == "recovered"


def test_a_flaky_verdict_never_excuses_a_critical_failure() -> None:
    from evalspec.results.compare import finish

    diff = compare_runs(run(rec("t", "passed")), run(rec("t", "failed", critical_failed=True,
                                                            assertions=[red_line("phone")])))
    flaky = row(diff, "t")
    flaky["category"], flaky["blocking"], flaky["replays"] = "flaky", False, ["passed"]  # what a passing replay does
    assert finish(diff)["reasons"] == ["critical assertion newly failed: t @ bot"]
