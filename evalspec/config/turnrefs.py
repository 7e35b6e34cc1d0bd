"""Turn references (`turn: 3`, `after: purchase_signal`, `scope: {turns: [2, plan]}`): one owner for
listing them, checking them against a conversation, and resolving them while grading.

A reference is a turn number (1-based; the replies to user message N) or a label on a user turn.
The loader checks them once the suite is read, the planner again once templates are rendered, and
grading resolves them against the planned conversation's labels.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import TYPE_CHECKING, Any

from evalspec.core.suggest import did_you_mean
from evalspec.extend.registry import resolve_type

if TYPE_CHECKING:
    from evalspec.config.model import AssertionSpec
    from evalspec.config.paths import PathKey


def turn_refs(spec: AssertionSpec) -> list[tuple[Any, PathKey]]:
    """Every turn reference in `spec` (the keys its parameters type `TurnRef`, and `{turns: ...}` scopes)
    with its path, as written (templates not yet rendered)."""
    refs: list[tuple[Any, PathKey]] = []
    resolved = resolve_type(spec.type)
    if resolved and isinstance(spec.value, dict):
        for key in resolved[0].turn_refs:
            if key in spec.value:
                refs.append((spec.value[key], (*spec.value_where, key)))
    if isinstance(spec.scope, dict):
        for i, ref in enumerate(spec.scope["turns"]):
            refs.append((ref, (*spec.where, "scope", "turns", i)))
    return refs


def ref_problem(ref: Any, labels: Collection[str], length: int | None) -> str | None:
    """What is wrong with `ref` in a conversation with these labels and `length` user turns (None: not
    known in advance), or None."""
    if isinstance(ref, bool) or not isinstance(ref, (int, str)):
        return f"turn reference {ref!r} is not a turn number or a label"
    if isinstance(ref, int):
        if ref < 1:
            return f"turn {ref} is out of range: turns are numbered from 1"
        if length is not None and ref > length:
            return f"turn {ref} is out of range: the conversation has {length} user turns"
        return None
    if ref not in labels:
        hint = did_you_mean(ref, sorted(labels))
        known = f"; labels in this test: {', '.join(sorted(labels))}" if labels and not hint else ""
        return f"label '{ref}' does not exist{hint}{known}"
    return None
