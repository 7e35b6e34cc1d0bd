"""Session rules: deterministic checks over the whole transcript, with turn + text evidence.

Turn N's reply is the assistant message answering user message N; `after: X` means the replies
to turn X and every later turn. Injected (`assistant:`) history is never checked.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, ClassVar

from evalspec.assertions.outcome import error_text
from evalspec.assertions.state import compiled, state_of, state_value, truthy
from evalspec.assertions.state import shown as shown_value
from evalspec.assertions.text import CountRange
from evalspec.config.model import AssertionSpec
from evalspec.core.errors import GradingError
from evalspec.extend.check import Check, Evidence, GradingContext, Said, Undecided, say, snippet
from evalspec.extend.params import Keywords, Regex, TurnRef
from evalspec.extend.patterns import search
from evalspec.extend.registry import assertion
from evalspec.providers.tool_rounds import call_text


@dataclass(frozen=True, kw_only=True)
class RuleParams:  # `pattern` (a regex over replies), `tool` (a tool name, docs/en/agents.md) or `state` (docs/en/state.md)
    schema_extra: ClassVar[dict[str, Any]] = {"oneOf": [{"required": ["pattern"]}, {"required": ["tool"]},
                                                        {"required": ["state"]}]}
    pattern: Annotated[Regex, Keywords(minLength=1)] | None = None
    tool: Annotated[str, Keywords(minLength=1, description="a tool name instead of a pattern")] | None = None
    state: Annotated[str, Keywords(minLength=1, description="a JMESPath expression over each turn's state "
                                                            "instead of a pattern: a turn matches when it is truthy")
                     ] | None = None

    def __post_init__(self) -> None:
        if self.state is not None:
            compiled(self.state)

    def what(self) -> Said:
        if self.state is not None:
            return say("what_state", expr=self.state)
        return say("what_tool", tool=self.tool) if self.tool is not None else say("what_pattern", pattern=self.pattern)


@dataclass(frozen=True, kw_only=True)
class NotBeforeParams(RuleParams):
    turn: TurnRef


@dataclass(frozen=True, kw_only=True)
class WithinParams(RuleParams):
    after: TurnRef
    turns: Annotated[int, Keywords(minimum=1)] = 1


@dataclass(frozen=True, kw_only=True)
class AtMostParams(RuleParams):
    count: Annotated[int, Keywords(minimum=0)]
    after: TurnRef | None = None


@dataclass(frozen=True, kw_only=True)
class NotAfterParams(RuleParams):
    after: TurnRef


def _matches(ctx: GradingContext, rule: RuleParams, turns: range | None = None,
             undecided: list[Undecided] | None = None) -> list[Evidence]:
    """Replies (within `turns`, if given) that match the rule's pattern, or the calls to its tool, as evidence.
    A turn without state (a `state` rule) is added to `undecided`, or raised when it is not given."""
    if rule.tool is not None:
        return [Evidence(turn, call_text(call)) for turn, call in ctx.tool_calls()
                if call["name"] == rule.tool and turn is not None and (turns is None or turn in turns)]
    hits = []
    if rule.state is not None:  # a turn without state is an error, never a turn that did not match
        for m in ctx.replies():
            turn = m.get("turn")
            if turn is not None and (turns is None or turn in turns):
                try:
                    found = state_value(rule.state, state_of(m, turn))
                except GradingError as exc:
                    if undecided is None:
                        raise
                    undecided.append(Undecided(turn, str(exc)))
                    continue
                if truthy(found):
                    hits.append(Evidence(turn, snippet(f"{rule.state} = {shown_value(found)}")))
        return hits
    for m in ctx.replies():
        turn = m.get("turn")
        if turn is None or (turns is not None and turn not in turns):
            continue
        found = search(str(rule.pattern), m["content"])
        if found:
            hits.append(Evidence(turn, found.group(0)))
    return hits


def _settled(check: Check, undecided: list[Undecided]) -> Check:
    """`check` beside the turns it could not read: it stands when those turns cannot change it (a match
    found, docs/en/reports-and-gate.md#errors-and-failures); else the rule is an error."""
    if undecided:
        check.undecided = undecided
    return check


def _undecided(undecided: list[Undecided]) -> None:
    """No match was found, and the turns that could not be read might hold one: an error."""
    if undecided:
        raise GradingError(error_text(undecided))


def _last_turn(ctx: GradingContext) -> int:
    turns = [turn for m in ctx.transcript if m["role"] == "user" and (turn := m.get("turn"))]
    return max(turns, default=0)


def _turn_seen(ctx: GradingContext, rule: RuleParams, turn: int) -> str:
    """What a rule saw at a turn that did not match: its reply, or the value of its state expression."""
    if rule.state is not None and (reply := ctx.reply_for_turn(turn)) is not None:
        return snippet(f"{rule.state} = {shown_value(state_value(rule.state, state_of(reply, turn)))}")
    return _reply_text(ctx, turn)[:160]


def _reply_text(ctx: GradingContext, turn: int) -> str:
    reply = ctx.reply_for_turn(turn)
    return reply.get("content", "") if reply else ""


@assertion("not-before", kind="conversation", params=NotBeforeParams,
           example="- not-before: {pattern: 到店|预约|试驾, turn: purchase_signal}")
def not_before(spec: AssertionSpec, ctx: GradingContext) -> Check:
    """No reply to a turn before `turn` matches the pattern (premature offer)."""
    rule: NotBeforeParams = spec.params
    limit, undecided = ctx.resolve_turn(rule.turn), list[Undecided]()
    hits = _matches(ctx, rule, range(1, limit), undecided)
    if hits:
        return _settled(Check.of(False, say("matched_before", turn=hits[0].turn, what=rule.what(), limit=limit), hits),
                        undecided)
    _undecided(undecided)
    return Check.of(True, say("none_before", limit=limit))


@assertion("within", kind="conversation", params=WithinParams,
           example="- within: {pattern: 到店|预约|试驾, after: purchase_signal, turns: 1}")
def within(spec: AssertionSpec, ctx: GradingContext) -> Check:
    """One of the replies to turns after .. after+turns-1 matches (closing window)."""
    rule: WithinParams = spec.params
    start = ctx.resolve_turn(rule.after)
    end = min(start + rule.turns - 1, _last_turn(ctx))
    window, undecided = range(start, end + 1), list[Undecided]()
    hits = _matches(ctx, rule, window, undecided)
    if hits:
        return _settled(Check.of(True, say("turn_matched", turn=hits[0].turn), hits[:1]), undecided)
    _undecided(undecided)
    shown = [Evidence(t, _turn_seen(ctx, rule, t), "no match") for t in window]
    span = say("turn_n", n=start) if start == end else say("turns_span", start=start, end=end)
    return Check.of(False, say("none_in", span=span, what=rule.what()), shown)


@assertion("at-most", kind="conversation", params=AtMostParams,
           example="- at-most: {pattern: 预约|试驾, count: 1}")
def at_most(spec: AssertionSpec, ctx: GradingContext) -> Check:
    """At most `count` replies (from `after` on, if given) match (no repeated offer)."""
    rule: AtMostParams = spec.params
    start, undecided = ctx.resolve_turn(rule.after) if rule.after is not None else 1, list[Undecided]()
    hits = _matches(ctx, rule, range(start, 10**9), undecided)
    limit = rule.count
    what = say("calls_to", n=len(hits), tool=rule.tool) if rule.tool is not None else say("replies_matched", n=len(hits))
    if len(hits) > limit:
        return _settled(Check.of(False, say("at_most_turns", what=what, limit=limit,
                                            turns=", ".join(str(h.turn) for h in hits)), hits), undecided)
    _undecided(undecided)
    return Check.of(True, say("at_most", what=what, limit=limit), hits)


@assertion("not-after", kind="conversation", params=NotAfterParams,
           example="- not-after: {pattern: 优惠|首付, after: accepted}")
def not_after(spec: AssertionSpec, ctx: GradingContext) -> Check:
    """No reply from `after` on matches (no new pitch after acceptance)."""
    rule: NotAfterParams = spec.params
    start, undecided = ctx.resolve_turn(rule.after), list[Undecided]()
    hits = _matches(ctx, rule, range(start, 10**9), undecided)
    if hits:
        return _settled(Check.of(False, say("matched_after", turn=hits[0].turn, what=rule.what(), start=start), hits),
                        undecided)
    _undecided(undecided)
    return Check.of(True, say("none_after", start=start))


@assertion("turn-count", kind="conversation", params=CountRange,
           example="- turn-count: {max: 6}")
def turn_count(spec: AssertionSpec, ctx: GradingContext) -> Check:
    """The number of user turns is within {min, max}."""
    n, bounds = ctx.user_turns(), spec.params
    ok = bounds.holds(n)
    return Check.of(ok, say("user_turns", n=n, min=bounds.min, max=bounds.max), [Evidence(n, f"{n} turns")])
