"""What a check examined (docs/en/reports-and-gate.md#statuses): the one owner of whether a rule's anchors
are in the conversation it grades.

A rule's anchors are the turn it is attached to, the turns its parameters name (`after:`, `turn:`) and those
of a `scope: {turns: [...]}`. An anchor is missing when it is a label that matched no user turn (a recorded
conversation, docs/en/recorded-conversations.md) or a turn the conversation does not have (no user message with that number). A
rule one of whose needed anchors is missing examined nothing: it is `skipped`, neither a pass nor a fail.
A `{turns: [...]}` scope checks the listed turns that are there (skipped when none is); `not-before` on a
missing turn checks every reply. A turn that was sent but got no reply is not missing: that is an error.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import replace
from typing import Any

from evalspec.assertions.evaluate import AssertionResult
from evalspec.config.model import AssertionSpec
from evalspec.config.turnrefs import turn_refs
from evalspec.extend.transcript import Message


def user_turns(transcript: list[Message]) -> set[int]:
    """The turn numbers of the conversation's user messages."""
    return {int(turn) for m in transcript if m.get("role") == "user" and isinstance(turn := m.get("turn"), int)}


def _missing(ref: Any, labels: Mapping[str, int], absent: Collection[str], turns: set[int]) -> str | None:
    """Why `ref` is not in this conversation, or None (it is there, or it is not a turn reference we know:
    resolving it then says what is wrong)."""
    if isinstance(ref, str) and ref in absent:
        return f"label '{ref}' not found"
    if isinstance(ref, str) and ref in labels:
        ref = labels[ref]
    elif isinstance(ref, str) and ref.isdigit():
        ref = int(ref)
    if isinstance(ref, int) and not isinstance(ref, bool) and ref >= 1 and ref not in turns:
        return f"turn {ref} is not in this conversation"
    return None


def examined(specs: list[AssertionSpec], transcript: list[Message], labels: Mapping[str, int],
             absent: Collection[str]) -> tuple[list[AssertionSpec], dict[int, AssertionResult]]:
    """The specs as they are checked on this conversation, and a skipped result for each one (by index)
    that would examine nothing."""
    if not specs:
        return specs, {}
    turns = user_turns(transcript)
    last = max(turns, default=0)
    out, skipped = list(specs), {}
    for i, spec in enumerate(specs):
        why = _missing(spec.turn, labels, absent, turns) if spec.turn is not None else None
        if why is None:
            scoped = isinstance(spec.scope, dict)
            refs = [ref for ref, path in turn_refs(spec) if not (scoped and "scope" in path)]
            missing = [(ref, w) for ref in refs if (w := _missing(ref, labels, absent, turns)) is not None]
            if missing and spec.type == "not-before" and not spec.negate and isinstance(spec.value, dict) \
                    and len(missing) == 1 and missing[0][0] == spec.value.get("turn"):
                out[i] = spec = replace(spec, value={**spec.value, "turn": last + 1})
                missing = []
            why = missing[0][1] if missing else None
            if why is None and scoped:
                listed = list(spec.scope["turns"])
                there = [ref for ref in listed if _missing(ref, labels, absent, turns) is None]
                if not there:
                    why = _missing(listed[0], labels, absent, turns) if listed else "no turn listed"
                elif len(there) < len(listed):
                    out[i] = replace(spec, scope={**spec.scope, "turns": there})
        if why is not None:
            skipped[i] = AssertionResult(spec.name, spec.scope, None, None, reason=why, weight=spec.weight,
                                         severity=spec.severity, metric=spec.metric, threshold=spec.threshold,
                                         turn=spec.turn, value=spec.value, skipped=True)
    return out, skipped
