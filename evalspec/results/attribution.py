"""The six failure attribution classes (docs/en/review.md) and failures grouped by them, from run.json
records. `simulator_fault` is set by the run itself (play/faults.py): the simulated user slipped."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # its CLASSES are read by the command line's start-up
    from evalspec.results.stream import R

CLASSES = ("bot_defect", "model_fluctuation", "rule_misjudgment", "infrastructure", "pending_fact", "simulator_fault")
ATTRIBUTABLE = ("failed", "error")


def by_attribution(records: Sequence[R]) -> dict[str, list[R]]:
    """Failed and errored records grouped by attribution (class order, then `unattributed`)."""
    groups: dict[str, list[R]] = {}
    for cls in (*CLASSES, "unattributed"):
        members = [r for r in records if r["status"] in ATTRIBUTABLE and (r.get("attribution") or "unattributed") == cls]
        if members:
            groups[cls] = members
    return groups
