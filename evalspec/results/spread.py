"""The simulator spread (docs/en/agents.md#comparing-two-simulators): one suite's simulated tests played by
several simulators, the pass rate each gives, and how far apart they are. A wide spread says the verdicts
measure the simulator as much as the bot."""

from __future__ import annotations

from collections.abc import Iterable

from evalspec.results.rundata import SimulatorSpread
from evalspec.results.verdict import Verdict, VerdictTally, tallied

__all__ = ["simulator_spread"]

DIGITS = 6


def simulator_spread(vs: VerdictTally | Iterable[Verdict], include_drafts: bool = False) -> SimulatorSpread | None:
    """`summary.simulator_spread`: each simulator's pass rate over the verdicts it played (counted as the
    suite's pass rate is: passed of passed + failed; null over none), in the order they were first played,
    and the largest difference between two rates; None when no verdict names a simulator."""
    played = tallied(vs, include_drafts).simulators
    if not played:
        return None
    rates: dict[str, float | None] = {name: round(t.passed / (t.passed + t.failed), DIGITS) if t.passed + t.failed
                                      else None for name, t in played.items()}
    known = [r for r in rates.values() if r is not None]
    return {"rates": rates, "max_difference": round(max(known) - min(known), DIGITS) if known else None}
