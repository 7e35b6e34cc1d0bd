"""Session rules: deterministic checks over the whole transcript, with turn + text evidence.

Turn N's reply is the assistant message answering user message N; `after: X` means the replies
to turn X and every later turn. Injected (`assistant:`) history is never checked.
"""

from __future__ import annotations

from typing import Any

from evalspec.assertions.base import Check, Evidence, GradingContext, search
from evalspec.assertions.registry import assertion
from evalspec.config.model import AssertionSpec

TURN_REF = {"type": ["integer", "string"], "description": "a turn number (1-based) or a label"}


def _rule(required: list[str], **props: Any) -> dict[str, Any]:
    return {"type": "object", "required": required, "additionalProperties": False,
            "properties": {"pattern": {"type": "string", "minLength": 1}, **props}}


def _matches(ctx: GradingContext, pattern: str, turns: range | None = None) -> list[Evidence]:
    """Replies (within `turns`, if given) that match `pattern`, as evidence."""
    hits = []
    for m in ctx.replies():
        turn = m.get("turn")
        if turn is None or (turns is not None and turn not in turns):
            continue
        found = search(pattern, m["content"])
        if found:
            hits.append(Evidence(turn, found.group(0)))
    return hits


def _last_turn(ctx: GradingContext) -> int:
    turns = [m["turn"] for m in ctx.transcript if m["role"] == "user" and m.get("turn")]
    return max(turns, default=0)


@assertion("not-before", kind="conversation", value=_rule(["pattern", "turn"], turn=TURN_REF),
           patterns=("pattern",), turn_refs=("turn",))
def not_before(spec: AssertionSpec, ctx: GradingContext) -> Check:
    """No reply to a turn before `turn` matches the pattern (premature offer)."""
    limit = ctx.resolve_turn(spec.value["turn"])
    hits = _matches(ctx, spec.value["pattern"], range(1, limit))
    if hits:
        return Check.of(False, f"turn {hits[0].turn} matched /{spec.value['pattern']}/ before turn {limit}", hits)
    return Check.of(True, f"no reply before turn {limit} matched")


@assertion("within", kind="conversation",
           value=_rule(["pattern", "after"], after=TURN_REF, turns={"type": "integer", "minimum": 1}),
           patterns=("pattern",), turn_refs=("after",))
def within(spec: AssertionSpec, ctx: GradingContext) -> Check:
    """One of the replies to turns after .. after+turns-1 matches (closing window)."""
    start = ctx.resolve_turn(spec.value["after"])
    end = min(start + int(spec.value.get("turns", 1)) - 1, _last_turn(ctx))
    window = range(start, end + 1)
    hits = _matches(ctx, spec.value["pattern"], window)
    if hits:
        return Check.of(True, f"turn {hits[0].turn} matched", hits[:1])
    shown = [Evidence(t, (ctx.reply_for_turn(t) or {}).get("content", "")[:160], "no match") for t in window]
    span = f"turn {start}" if start == end else f"turns {start}-{end}"
    return Check.of(False, f"no reply in {span} matched /{spec.value['pattern']}/", shown)


@assertion("at-most", kind="conversation",
           value=_rule(["pattern", "count"], count={"type": "integer", "minimum": 0}, after=TURN_REF),
           patterns=("pattern",), turn_refs=("after",))
def at_most(spec: AssertionSpec, ctx: GradingContext) -> Check:
    """At most `count` replies (from `after` on, if given) match (no repeated offer)."""
    start = ctx.resolve_turn(spec.value["after"]) if "after" in spec.value else 1
    hits = _matches(ctx, spec.value["pattern"], range(start, 10**9))
    limit = int(spec.value["count"])
    if len(hits) > limit:
        return Check.of(False, f"{len(hits)} replies matched (at most {limit}): turns "
                        + ", ".join(str(h.turn) for h in hits), hits)
    return Check.of(True, f"{len(hits)} replies matched (at most {limit})", hits)


@assertion("not-after", kind="conversation", value=_rule(["pattern", "after"], after=TURN_REF),
           patterns=("pattern",), turn_refs=("after",))
def not_after(spec: AssertionSpec, ctx: GradingContext) -> Check:
    """No reply from `after` on matches (no new pitch after acceptance)."""
    start = ctx.resolve_turn(spec.value["after"])
    hits = _matches(ctx, spec.value["pattern"], range(start, 10**9))
    if hits:
        return Check.of(False, f"turn {hits[0].turn} matched /{spec.value['pattern']}/ at or after turn {start}", hits)
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
