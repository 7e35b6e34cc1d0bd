"""The shapes importers write (a suite's test, its turns, a check) and read (foreign JSON and YAML).

A written suite is YAML evalspec reads back (docs/en/suite-format.md): its tests and turns have known keys
(`SuiteTest`, `SuiteTurn`); a check is a mapping whose one check key is its name (`contains: …`) beside
its options (weight, threshold, metric, scope), so its keys are open (`Check`). What an importer reads
is someone else's data: `object` until it is narrowed (`mapping`, `mappings`).
"""

from __future__ import annotations

from typing import TypedDict

Check = dict[str, object]  # {NAME: value, weight?, threshold?, metric?, scope?, severity?, ...}

# a turn: the user's message (or a recorded reply), what is captured from the reply, its vars, its label
# and its checks
SuiteTurn = TypedDict("SuiteTurn", {
    "user": object, "assistant": object, "capture": object, "vars": object, "label": object,
    "assert": list[Check],
}, total=False)

# a test: its conversation (or a simulated user / an attack playing it), its own checks and vars
SuiteTest = TypedDict("SuiteTest", {
    "id": str, "name": str, "conversation": list[SuiteTurn], "assert": list[Check], "vars": object,
    "threshold": object, "providers": list[str], "matrix": dict[str, list[object]], "simulate": object,
    "attack": object, "tags": list[object], "reduce": str, "until_turn": str, "transcript": list[SuiteTurn],
}, total=False)


def said(role: str, text: object) -> SuiteTurn:
    """A message of a recorded history as a turn: the assistant's reply, or else the user's message."""
    return {"assistant": text} if role == "assistant" else {"user": text}


def mapping(value: object) -> dict[str, object]:
    """A mapping read from foreign data, or {} when it is something else."""
    return value if isinstance(value, dict) else {}


def mappings(value: object) -> list[dict[str, object]]:
    """The mappings of a list read from foreign data (anything else in it, or a value that is no list: none)."""
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []
