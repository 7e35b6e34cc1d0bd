"""`summary.simulator_spread` counted as the suite's pass rate is (docs/en/agents.md#comparing-two-simulators):
passed of passed + failed per simulator; errors (a simulator's faults) and drafts are not counted."""

from __future__ import annotations

from evalspec.results.spread import simulator_spread
from evalspec.results.verdict import Verdict


def verdict(simulator: str | None, status: str, draft: bool = False) -> Verdict:
    return Verdict("s.yaml", f"t[simulator={simulator}]", "t", "bot", status, 1, int(status == "passed"),  # type: ignore[arg-type]
                   float(status == "passed"), status == "passed", None, None, not draft, False, draft, False, False,
                   simulator=simulator)


def test_errors_and_drafts_are_not_counted_and_a_simulator_without_any_rate_is_null() -> None:
    vs = [verdict("a", "passed"), verdict("a", "failed"), verdict("a", "error"), verdict("a", "passed", draft=True),
          verdict("b", "passed"), verdict("b", "passed"), verdict("c", "error"), verdict(None, "failed")]
    assert simulator_spread(vs) == {"rates": {"a": 0.5, "b": 1.0, "c": None}, "max_difference": 0.5}


def test_no_spread_without_a_simulator_and_none_between_one() -> None:
    assert simulator_spread([verdict(None, "passed")]) is None
    assert simulator_spread([verdict("a", "failed")]) == {"rates": {"a": 0.0}, "max_difference": 0.0}
