"""A simulated journey's milestones (docs/en/agents.md#milestones): the one reader of what each milestone
became, for the record, the reports and the `trajectory:milestones` check.

The simulated user marks the transcript as it plays (play/simulated.py): each user message it writes for
milestone k carries `milestone: k`, and the reply that met it `milestone_met: k` (k counts the goals,
1-based; fixed `user:` turns are not milestones). A milestone is `met` at that reply's turn, `missed`
when it was played and never met (its turn: the last one played), else `not_reached` (turn null).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Annotated, Any, ClassVar

from evalspec.config.model import milestone_goals
from evalspec.extend.check import Check, Evidence, GradingContext, Said
from evalspec.extend.params import Keywords
from evalspec.extend.registry import assertion
from evalspec.extend.transcript import Checkpoint, Message

__all__ = ["checkpoint_failures", "milestone_goals", "milestone_statuses"]


def milestone_statuses(goals: Sequence[str], messages: Sequence[Message],
                       cut_short: bool = False) -> list[dict[str, Any]]:
    """[{goal, status: met | missed | not_reached, turn}] for each goal, from the marked transcript.
    `cut_short`: the conversation ended in an error (a simulator fault, a timeout): the milestone it was
    on was never given its turns, so it is `not_reached`, not missed (docs/en/agents.md#reading-simulator-faults)."""
    played = [m.get("turn") for m in messages if m["role"] == "user" and m.get("turn") is not None]
    last = played[-1] if played else None
    out = []
    for k, goal in enumerate(goals, 1):
        met = next((m.get("turn") for m in messages if m["role"] == "assistant" and m.get("milestone_met") == k), None)
        tried = any(m["role"] == "user" and m.get("milestone") == k for m in messages)
        status = "met" if met is not None else "missed" if tried and not cut_short else "not_reached"
        out.append({"goal": goal, "status": status, "turn": met if met is not None else last if status == "missed" else None})
    return out


@dataclass(frozen=True)
class MilestonesParams:
    """`trajectory:milestones: true` (the goals are the test's `simulate.milestones`)"""

    value_field: ClassVar[str] = "value"
    value: Annotated[bool | list[str] | None, Keywords(
        description="true: the test's `simulate.milestones` (filled in from them)")] = None


@assertion("trajectory:milestones", kind="conversation", params=MilestonesParams,
           example=("- id: finance-journey                 # a simulated journey: it has milestones\n"
                    "  simulate:\n"
                    "    instructions: 你想买一台瑶光，关心分期。\n"
                    "    milestones:\n"
                    "      - {goal: 谈分期, done_when: {assistant_matches: 首付}, max_turns: 2}\n"
                    "    max_turns: 4\n"
                    "  assert:\n"
                    "    - trajectory:milestones: true\n"
                    "      severity: critical"))
def milestones_check(spec: Any, ctx: GradingContext) -> Check:
    """Every milestone of the simulated journey was met, in order (implied by `simulate.milestones`)."""
    goals = [str(g) for g in spec.value] if isinstance(spec.value, list) else []
    statuses = milestone_statuses(goals, ctx.transcript)
    for k, s in enumerate(statuses, 1):
        if s["status"] == "met":
            continue
        turns = [m.get("turn") for m in ctx.transcript if m["role"] == "user" and m.get("milestone") == k]
        if s["status"] == "missed":
            reason = Said(f"milestone {k} ({s['goal']}) not met within {len(turns)} turns",
                          f"里程碑 {k}（{s['goal']}）在 {len(turns)} 轮内未达成")
            evidence = [Evidence(t, f"milestone {k}: turn {t}") for t in turns if isinstance(t, int)]
        else:
            reason, evidence = Said(f"milestone {k} ({s['goal']}) not reached", f"里程碑 {k}（{s['goal']}）未走到"), []
        return Check.of(False, reason, evidence)
    return Check.of(True, Said(f"{len(statuses)} milestones met", f"{len(statuses)} 个里程碑均已达成"))


@dataclass(frozen=True)
class CheckpointsParams:
    """`trajectory:checkpoints: true` (the criteria are the test's `simulate.checkpoints`)"""

    value_field: ClassVar[str] = "value"
    value: Annotated[bool | None, Keywords(description="true (implied by `simulate.checkpoints`)")] = None


def checkpoint_failures(messages: Sequence[Message]) -> list[tuple[int | None, Checkpoint]]:
    """(turn, verdict) of every checkpoint criterion the judge found failed."""
    return [(m.get("turn"), c) for m in messages if m["role"] == "assistant"
            for c in m.get("checkpoints") or [] if not c.get("pass")]


@assertion("trajectory:checkpoints", kind="conversation", params=CheckpointsParams,
           example=("- id: checked-journey                 # a simulated journey: it has checkpoints\n"
                    "  simulate:\n"
                    "    instructions: 你想买一台瑶光，关心分期。\n"
                    "    checkpoints: [{after_turn: 2, criteria: [助手没有在用户表达购买意向前邀约]}]\n"
                    "    max_turns: 4\n"
                    "  assert:\n"
                    "    - trajectory:checkpoints: true\n"
                    "      severity: critical"))
def checkpoints_check(spec: Any, ctx: GradingContext) -> Check:
    """Every checkpoint criterion held where it was asked (implied by `simulate.checkpoints`)."""
    asked = [c for m in ctx.transcript if m["role"] == "assistant" for c in m.get("checkpoints") or []]
    failed = checkpoint_failures(ctx.transcript)
    if not failed:
        return Check.of(True, Said(f"{len(asked)} checkpoint criteria held", f"{len(asked)} 个检查点标准均满足"))
    turn, first = failed[0]
    evidence = [Evidence(t, f"{c['criterion']}: {c.get('reason', '')}") for t, c in failed]
    return Check.of(False, Said(f"turn {turn}: checkpoint {first['criterion']!r} failed: {first.get('reason', '')}",
                                f"第 {turn} 轮：检查点「{first['criterion']}」未满足：{first.get('reason', '')}"), evidence)
