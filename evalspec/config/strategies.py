"""The context strategies as the suite declares them: their names, the `history:` key's schema, and
what a schema cannot check about it. `providers/history.py` implements them; this is what the suite's
parser and schema read (and the kinds that accept `history:` list `HISTORY_KEY` among their keys).
"""

from __future__ import annotations

from typing import Any

from evalspec.extend.params import JsonSchema

MODES = ("full", "window", "summary", "facts")
NEEDS_TURNS = ("window", "summary", "facts")
NEEDS_MODEL = ("summary", "facts")

HISTORY_KEY: JsonSchema = {
    "type": "object",
    "properties": {
        "mode": {"enum": list(MODES),
                 "description": "full (default) | window: the last `turns` exchanges | summary: older exchanges "
                                "folded into a running summary | facts: facts the user stated, as a list"},
        "turns": {"type": "integer", "minimum": 0, "description": "complete exchanges kept verbatim"},
        "model": {"anyOf": [{"type": "string"}, {"$ref": "#/$defs/provider_ref"}],
                  "description": "the model that writes the summary or facts (default: the provider's own)"},
        "max_tokens": {"type": "integer", "minimum": 1, "description": "cap on each summary/facts call"}},
    "additionalProperties": False,
}


def history_problem(history: Any, kind: str, accepted_by: list[str]) -> str | None:
    """What is wrong with a `kind` provider's `history:` (beyond its schema), or None; `accepted_by`
    names the kinds that take a context strategy."""
    if not isinstance(history, dict):
        return None
    mode = history.get("mode", "full")
    if mode in NEEDS_TURNS and "turns" not in history:
        return f"history mode '{mode}' needs 'turns' (complete exchanges to keep verbatim)"
    if kind not in accepted_by and mode != "full":
        return (f"history applies to {' and '.join(f'{k}:' for k in sorted(accepted_by))} providers; "
                f"an {kind} provider keeps its own context")
    if mode in NEEDS_MODEL and kind != "model" and not history.get("model"):
        return f"history mode '{mode}' on a {kind} provider needs 'model' (the model that writes the {mode})"
    if mode not in NEEDS_MODEL and ("model" in history or "max_tokens" in history):
        return f"history 'model' and 'max_tokens' go with mode summary or facts, not '{mode}'"
    return None
