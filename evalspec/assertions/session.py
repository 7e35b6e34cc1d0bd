"""Session rules: deterministic checks over the whole transcript, with turn + text evidence.

Turn N's reply is the assistant message answering user message N; `after: X` means the replies
to turn X and every later turn. Injected (`assistant:`) history is never checked.
"""

from __future__ import annotations

from typing import Any

from evalspec.agent import call_text
from evalspec.assertions.base import Check, Evidence, GradingContext
from evalspec.assertions.patterns import search
from evalspec.assertions.registry import assertion
from evalspec.config.model import AssertionSpec

TURN_REF = {"type": ["integer", "string"], "description": "a turn number (1-based) or a label"}


def _rule(required: list[str], **props: Any) -> dict[str, Any]:
    """A rule's value: `pattern` (a regex over replies) or `tool` (a tool name, SPEC §13), plus `props`."""
    return {"type": "object", "required": required, "additionalProperties": False,
            "oneOf": [{"required": ["pattern"]}, {"required": ["tool"]}],
            "properties": {"pattern": {"type": "string", "minLength": 1},
                           "tool": {"type": "string", "minLength": 1, "description": "a tool name instead of a pattern"},
                           **props}}


def _what(value: dict[str, Any]) -> str:
    return f"tool {value['tool']}" if "tool" in value else f"/{value['pattern']}/"


def _matches(ctx: GradingContext, value: dict[str, Any], turns: range | None = None) -> list[Evidence]:
    """Replies (within `turns`, if given) that match the rule's pattern, or the calls to its tool, as evidence."""
    if "tool" in value:
        return [Evidence(turn, call_text(call)) for turn, call in ctx.tool_calls()
                if call["name"] == value["tool"] and turn is not None and (turns is None or turn in turns)]
    hits = []
    for m in ctx.replies():
        turn = m.get("turn")
        if turn is None or (turns is not None and turn not in turns):
            continue
        found = search(value["pattern"], m["content"])
        if found:
            hits.append(Evidence(turn, found.group(0)))
    return hits


def _last_turn(ctx: GradingContext) -> int:
    turns = [m["turn"] for m in ctx.transcript if m["role"] == "user" and m.get("turn")]
    return max(turns, default=0)


@assertion("not-before", kind="conversation", value=_rule(["turn"], turn=TURN_REF),
           patterns=("pattern",), turn_refs=("turn",))
def not_before(spec: AssertionSpec, ctx: GradingContext) -> Check:
    """No reply to a turn before `turn` matches the pattern (premature offer)."""
    limit = ctx.resolve_turn(spec.value["turn"])
    hits = _matches(ctx, spec.value, range(1, limit))
    if hits:
        return Check.of(False, f"turn {hits[0].turn} matched {_what(spec.value)} before turn {limit}", hits)
    return Check.of(True, f"no reply before turn {limit} matched")


@assertion("within", kind="conversation",
           value=_rule(["after"], after=TURN_REF, turns={"type": "integer", "minimum": 1}),
           patterns=("pattern",), turn_refs=("after",))
def within(spec: AssertionSpec, ctx: GradingContext) -> Check:
    """One of the replies to turns after .. after+turns-1 matches (closing window)."""
    start = ctx.resolve_turn(spec.value["after"])
    end = min(start + int(spec.value.get("turns", 1)) - 1, _last_turn(ctx))
    window = range(start, end + 1)
    hits = _matches(ctx, spec.value, window)
    if hits:
        return Check.of(True, f"turn {hits[0].turn} matched", hits[:1])
    shown = [Evidence(t, (ctx.reply_for_turn(t) or {}).get("content", "")[:160], "no match") for t in window]
    span = f"turn {start}" if start == end else f"turns {start}-{end}"
    return Check.of(False, f"no reply in {span} matched {_what(spec.value)}", shown)


@assertion("at-most", kind="conversation",
           value=_rule(["count"], count={"type": "integer", "minimum": 0}, after=TURN_REF),
           patterns=("pattern",), turn_refs=("after",))
def at_most(spec: AssertionSpec, ctx: GradingContext) -> Check:
    """At most `count` replies (from `after` on, if given) match (no repeated offer)."""
    start = ctx.resolve_turn(spec.value["after"]) if "after" in spec.value else 1
    hits = _matches(ctx, spec.value, range(start, 10**9))
    limit = int(spec.value["count"])
    what = "calls to " + spec.value["tool"] if "tool" in spec.value else "replies matched"
    if len(hits) > limit:
        return Check.of(False, f"{len(hits)} {what} (at most {limit}): turns "
                        + ", ".join(str(h.turn) for h in hits), hits)
    return Check.of(True, f"{len(hits)} {what} (at most {limit})", hits)


@assertion("not-after", kind="conversation", value=_rule(["after"], after=TURN_REF),
           patterns=("pattern",), turn_refs=("after",))
def not_after(spec: AssertionSpec, ctx: GradingContext) -> Check:
    """No reply from `after` on matches (no new pitch after acceptance)."""
    start = ctx.resolve_turn(spec.value["after"])
    hits = _matches(ctx, spec.value, range(start, 10**9))
    if hits:
        return Check.of(False, f"turn {hits[0].turn} matched {_what(spec.value)} at or after turn {start}", hits)
    return Check.of(True, f"no reply from turn {start} on matched")


@assertion("turn-count", kind="conversation", value={
    "type": "object", "additionalProperties": False, "minProperties": 1,
    "properties": {"min": {"type": "integer", "minimum": 0}, "max": {"type": "integer", "minimum": 0}},
})
def turn_count(spec: AssertionSpec, ctx: GradingContext) -> Check:
    """The number of user turns is within {min, max}."""
    n = ctx.user_turns()
    lo, hi = spec.value.get("min"), spec.value.get("max")
    ok = (lo is None or n >= lo) and (hi is None or n <= hi)
    return Check(ok, 1.0 if ok else 0.0, f"{n} user turns (min {lo}, max {hi})", [Evidence(n, f"{n} turns")])
