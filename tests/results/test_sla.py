"""SLA verdicts and their text read curve values one way: which points an SLA covers, and which point it
is measured by (SPEC §2.3, §9: `at 5: 0.67 < 0.80`)."""

from __future__ import annotations

from typing import Any

from evalspec.results.aggregate import sla_verdicts
from evalspec.results.curves import curves


def records(points: list[tuple[Any, float]], at: float, min_score: float = 0.8) -> list[dict[str, Any]]:
    """One record per (curve value, score) of the curve test `decay`."""
    return [{"suite": "s.yaml", "test": "decay", "name": "decay", "provider": "bot", "curve": "distance",
             "matrix": {"distance": value}, "status": "passed" if score >= min_score else "failed",
             "score": score, "sla": [{"at": at, "min_score": min_score}]} for value, score in points]


def sla(points: list[tuple[Any, float]], at: float) -> dict[str, Any]:
    (verdict,) = sla_verdicts(curves(records(points, at)))
    return verdict


def test_a_boolean_curve_value_is_not_covered_by_the_sla_nor_named_in_its_text() -> None:
    verdict = sla([(True, 0.2), (2, 0.9)], at=3)
    assert verdict["status"] == "met"
    assert verdict["text"] == "at 2: 0.90 ≥ 0.80"  # not "at True: 0.20 ≥ 0.80"


def test_a_met_sla_is_measured_by_its_lowest_point_and_on_a_tie_by_the_furthest() -> None:
    assert sla([(1, 0.9), (3, 0.85), (5, 0.85), (8, 0.1)], at=5)["text"] == "at 5: 0.85 ≥ 0.80"
    assert sla([(5, 0.85), (3, 0.85), (1, 0.9)], at=5)["text"] == "at 5: 0.85 ≥ 0.80"
    assert sla([(1, 0.9), (3, 0.82), (5, 0.85)], at=5)["text"] == "at 3: 0.82 ≥ 0.80"


def test_string_and_number_values_are_covered_alike_and_listed_in_numeric_order() -> None:
    verdict = sla([("10", 0.5), (2, 0.6), ("0.5", 0.9), ("far", 0.0)], at=10)
    assert verdict["status"] == "missed"
    assert verdict["text"] == "at 2: 0.60 < 0.80; at 10: 0.50 < 0.80"
    (curve,) = curves(records([("10", 0.5), (2, 0.6), ("0.5", 0.9)], at=10))
    assert curve["sla"][0]["missed_at"] == [2, "10"]


def test_an_sla_no_point_reaches_has_no_data() -> None:
    verdict = sla([(20, 0.1), ("x", 0.1)], at=10)
    assert verdict["status"] == "no data"
    assert verdict["text"] == "no measured point at or below 10 (target ≥ 0.80)"


def test_the_failure_point_reads_fails_as_the_sla_does() -> None:
    # every sample passes its own assertions but scores below the SLA minimum covering its point
    recs = [{**r, "status": "passed"} for r in records([(1, 0.9), (1, 0.9), (3, 0.7), (3, 0.7), (5, 0.2)], at=4)]
    (curve,) = curves(recs)
    assert curve["failure_point"] == 3  # 0.7 < 0.8 at 3; beyond the SLA, below 0.5 fails
    (beyond,) = curves([{**r, "status": "failed"} for r in records([(1, 0.9), (5, 0.6), (8, 0.4)], at=4)])
    assert beyond["failure_point"] == 8
