"""Checking what the bot did, not what it said (docs/en/world.md).

`world`, `world-matches` and `world-unchanged` read the world as the conversation left it (and as it
started); `said-vs-did` holds the replies to the calls: a reply that claims an action (by a pattern per
tool, or as the judge reads it) must come after a call of that tool that did not error. A test without
a world cannot run a world check: it is an error, never a pass.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal

from evalspec.assertions.graded import JUDGE_SYSTEM, format_transcript
from evalspec.assertions.state import compiled, shown, value_check
from evalspec.config.model import AssertionSpec
from evalspec.config.world import WorldFileProblem, read_json_object
from evalspec.core.errors import GradingError, ProviderError
from evalspec.core.jsondiff import Difference, differences, same
from evalspec.extend.check import (
    Check,
    Evidence,
    GradingContext,
    JudgeRequest,
    Undecided,
    WorldView,
    say,
    snippet,
)
from evalspec.extend.params import UNSET, Key, Keywords, Regex
from evalspec.extend.patterns import regex_problem, search
from evalspec.extend.registry import assertion
from evalspec.extend.transcript import Message, replies

Path_ = Annotated[str, Keywords(minLength=1, description="a JMESPath expression over the final world")]


def world_of(ctx: GradingContext, what: str) -> WorldView:
    """The test's world; none is an error naming the check (never a pass)."""
    if ctx.world is None:
        raise GradingError(f"'{what}' reads the world, and this test has none: give the suite or the test a "
                           "`world:`")
    return ctx.world


@dataclass(frozen=True)
class WorldParams:
    """`world: EXPR` (truthy passes) or `{path, equals | matches | in | exists | contains}`"""

    short_field: ClassVar[str] = "path"
    path: Path_
    equals: Annotated[Any, Keywords(description="the value the path must equal")] = UNSET
    matches: Regex | None = None
    in_: Annotated[list[Any] | None, Key("in"), Keywords(description="the values the path may have")] = None
    exists: Annotated[bool | None, Keywords(description="true: the path yields a value (not null); "
                                                        "false: it yields null")] = None
    contains: Annotated[Any, Keywords(description="a list the path yields holds this value, or a text the "
                                                  "path yields holds this substring")] = UNSET

    def __post_init__(self) -> None:
        compiled(self.path)
        given = [k for k, v in (("equals", self.equals is not UNSET), ("matches", self.matches is not None),
                                ("in", self.in_ is not None), ("exists", self.exists is not None),
                                ("contains", self.contains is not UNSET)) if v]
        if len(given) > 1:
            raise ValueError(f"one comparison per world check: found {', '.join(given)}")


def _contains(found: Any, wanted: Any) -> bool:
    if isinstance(found, list):
        return any(same(item, wanted) for item in found)
    return isinstance(found, str) and isinstance(wanted, str) and wanted in found


@assertion("world", kind="conversation", params=WorldParams,
           example="- world: {path: \"visits[?user_id=='u1'].date | [0]\", equals: '2026-12-05'}   # over the final world")
def world_check(spec: AssertionSpec, ctx: GradingContext) -> Check:
    """A JMESPath expression over the final world is truthy (or equals, matches, is in, exists, contains)."""
    p: WorldParams = spec.params
    found = compiled(p.path).search(dict(world_of(ctx, "world").final))
    extra = None if p.contains is UNSET else (_contains(found, p.contains),
                                              say("world_no_contain", value=shown(p.contains)))
    return value_check(p.path, found, p, None, extra)


# -- the whole world --------------------------------------------------------------------------------

@dataclass(frozen=True)
class WorldMatchesParams:
    value_field: ClassVar[str] = "expected"
    expected: Annotated[str | dict[str, Any], Keywords(
        description="the world expected at the end: a JSON file (relative to the suite) or a mapping")]


def _size(value: Any) -> str:
    return f"{len(value)} items" if isinstance(value, list) else shown(value)


def difference_text(d: Difference, expected: str = "expected", got: str = "got") -> str:
    """`visits[1].date: expected "2026-12-05", got "2026-12-06"` (a list that changed length by its size)."""
    if not d.had:
        return f"{d.path}: not {expected}, {got} {snippet(shown(d.after), 80)}"
    if not d.has:
        return f"{d.path}: {expected} {snippet(shown(d.before), 80)}, {got} nothing"
    if isinstance(d.before, list) and isinstance(d.after, list):
        return f"{d.path}: {expected} {_size(d.before)}, {got} {_size(d.after)}"
    return f"{d.path}: {expected} {snippet(shown(d.before), 80)}, {got} {snippet(shown(d.after), 80)}"


def expected_world(value: Any, suite_dir: Path) -> Mapping[str, Any]:
    if isinstance(value, Mapping):
        return value
    try:
        return read_json_object(suite_dir / str(value), "expected world")
    except WorldFileProblem as exc:
        raise GradingError(str(exc)) from None


@assertion("world-matches", kind="conversation", params=WorldMatchesParams,
           example="- world-matches: {visits: []}   # or a JSON file: the final world equals it")
def world_matches(spec: AssertionSpec, ctx: GradingContext) -> Check:
    """The final world equals this one (a JSON file or a mapping); the evidence names each differing path."""
    p: WorldMatchesParams = spec.params
    wanted = expected_world(p.expected, ctx.suite_dir)
    found = list(differences(dict(wanted), dict(world_of(ctx, "world-matches").final)))
    if not found:
        return Check.of(True, say("world_expected"))
    paths = [d.path for d in found]
    more = say("world_more", n=len(paths) - 5) if len(paths) > 5 else ""
    check = Check.of(False, say("world_differs", paths=", ".join(paths[:5]), more=more),
                     [Evidence(None, difference_text(d)) for d in found[:20]])
    check.details = {"paths": paths}
    return check


@dataclass(frozen=True)
class WorldUnchangedParams:
    value_field: ClassVar[str] = "paths"
    paths: Annotated[list[Path_], Keywords(minItems=1, description="JMESPath expressions whose value must be "
                                                                   "the same at the end as at the start")]

    def __post_init__(self) -> None:
        for path in self.paths:
            compiled(path)


@assertion("world-unchanged", kind="conversation", params=WorldUnchangedParams,
           example="- world-unchanged: [orders, inventory]")
def world_unchanged(spec: AssertionSpec, ctx: GradingContext) -> Check:
    """Each path's value is the same at the end of the conversation as at its start."""
    p: WorldUnchangedParams = spec.params
    world = world_of(ctx, "world-unchanged")
    changed, nowhere = [], []
    for path in p.paths:
        before, after = compiled(path).search(dict(world.initial)), compiled(path).search(dict(world.final))
        if before is None and after is None:  # a misspelt key compares nothing: never a pass
            nowhere.append(Undecided(None, f"{path!r} finds nothing in the world, at the start "
                                           "nor at the end: nothing was compared (a misspelt key?); to check "
                                           f"that it stays absent, write `world: {{path: {path!r}, exists: false}}`"))
        changed += [Difference(path if d.path == "@" else f"{path} → {d.path}", d.before, d.after, d.had, d.has)
                    for d in differences(before, after)][:1]
    if not changed:
        result = Check.of(True, say("world_unchanged", paths=", ".join(p.paths)))
    else:
        result = Check.of(False, say("world_changed", paths=", ".join(d.path for d in changed)),
                          [Evidence(None, difference_text(d, "was", "now")) for d in changed])
    result.undecided = nowhere
    return result


# -- said vs did ------------------------------------------------------------------------------------

@dataclass(frozen=True)
class SaidVsDidParams:
    """`said-vs-did: {claims: {TOOL: PATTERN}}` or `said-vs-did: judge`"""

    short_field: ClassVar[str] = "mode"
    mode: Annotated[Literal["claims", "judge"], Keywords(
        description="judge: the judge reads which actions each reply claims, from the tool list")] = "claims"
    claims: Annotated[dict[str, str] | None, Keywords(
        minProperties=1, description="TOOL: a regex; a reply it matches claims that tool was called")] = None

    def __post_init__(self) -> None:
        if self.mode == "claims" and not self.claims:
            raise ValueError("said-vs-did takes {claims: {TOOL: PATTERN}} or 'judge'")
        for tool, pattern in (self.claims or {}).items():
            if problem := regex_problem(str(pattern)):
                raise ValueError(f"claims.{tool}: {problem}")

    def uses_model(self) -> bool:
        return self.mode == "judge"


def call_name(call: Mapping[str, Any]) -> str:
    """A call's tool name, as played (`{id, name, arguments}`) or as recorded (OpenAI's `function: {name}`)."""
    function = call.get("function")
    return str((function if isinstance(function, Mapping) else call).get("name"))


def done_by(transcript: list[Message]) -> dict[int, set[str]]:
    """For each message index, the tools called, not errored, up to and including that message."""
    errored = {m.get("tool_call_id") for m in transcript if m["role"] == "tool" and m.get("error")}
    done: set[str] = set()
    out: dict[int, set[str]] = {}
    for i, m in enumerate(transcript):
        for call in m.get("tool_calls") or [] if m["role"] == "assistant" else []:
            if call.get("id") not in errored:
                done.add(call_name(call))
        out[i] = set(done)
    return out


def called_at_all(transcript: list[Message], tool: str, upto: int) -> bool:
    return any(call_name(c) == tool for m in transcript[: upto + 1] if m["role"] == "assistant"
               for c in m.get("tool_calls") or [])


def _claim_check(claimed: list[tuple[int, int, str, str]], transcript: list[Message]) -> Check:
    """`claimed`: (message index, turn, tool, what the reply said) -> failed at each claim without its call."""
    done = done_by(transcript)
    bad, reasons = [], []
    for index, turn, tool, said in claimed:
        if tool in done[index]:
            continue
        why = "claim_errored" if called_at_all(transcript, tool, index) else "claim_never_called"
        reasons.append(say(why, turn=turn, said=said, tool=tool))
        bad.append(Evidence(turn, reasons[-1].en))
    if bad:
        more = say("claims_more", n=len(bad) - 1) if len(bad) > 1 else ""
        return Check.of(False, say("claims_first", first=reasons[0], more=more), bad)
    return Check.of(True, say("claims_done", n=len(claimed)) if claimed else say("claims_none"))


def _reply_indexes(transcript: list[Message]) -> list[int]:
    wanted = {id(m) for m in replies(transcript)}
    return [i for i, m in enumerate(transcript) if id(m) in wanted]


CLAIMS_SCHEMA = {"type": "object", "required": ["reason", "claims"], "additionalProperties": False,
                 "properties": {"reason": {"type": "string"}, "claims": {
                     "type": "array", "items": {"type": "object", "required": ["turn", "tool"],
                                                "properties": {"turn": {"type": "integer"},
                                                               "tool": {"type": "string"},
                                                               "quote": {"type": "string"}}}}}}


async def _judged_claims(ctx: GradingContext, indexes: list[int]) -> tuple[list[tuple[int, int, str, str]], Any]:
    from evalspec.providers.tool_rounds import load_tools

    if ctx.judge is None:
        raise GradingError("'said-vs-did: judge' needs a judge: set `judge:` in the suite")
    try:
        tools = load_tools(ctx.tools, ctx.suite_dir) or []
    except ProviderError as exc:
        raise GradingError(str(exc)) from None
    names = [str(t["function"].get("name")) for t in tools]
    if not names:
        raise GradingError("'said-vs-did: judge' asks which of the tools each reply claims, and there are none: "
                           "declare the suite's `tools:` (or the provider's)")
    listing = "\n".join(f"- {t['function'].get('name')}: {t['function'].get('description') or ''}" for t in tools)
    prompt = (f"Conversation:\n{format_transcript(ctx.transcript)}\n\nTools the assistant can use:\n{listing}\n\n"
              "For each assistant reply, list the actions it tells the user were done (booked, ordered, "
              "cancelled, sent ...), naming the tool that does each. Count only claims that something was done, "
              "not offers, questions or plans. Answer with a JSON object with two keys: \"reason\" (one "
              "sentence) and \"claims\" (a list of {\"turn\": N, \"tool\": NAME, \"quote\": the reply's words}, "
              "empty when no reply claims an action).")
    verdict = await ctx.judge(JudgeRequest([{"role": "system", "content": JUDGE_SYSTEM},
                                            {"role": "user", "content": prompt}], schema=CLAIMS_SCHEMA,
                                           name="claims"))
    raw = verdict.answer.get("claims")
    if not isinstance(raw, list):
        raise GradingError(f"judge answer has no list 'claims': {json.dumps(verdict.answer, ensure_ascii=False)[:200]}")
    by_turn = {ctx.transcript[i].get("turn"): i for i in indexes}
    claimed = []
    for item in raw:
        if not isinstance(item, dict) or item.get("tool") not in names or item.get("turn") not in by_turn:
            continue  # a tool not on the list or a turn with no reply is no claim of this conversation
        quote = str(item.get("quote") or item["tool"])
        claimed.append((by_turn[item["turn"]], int(item["turn"]), str(item["tool"]), snippet(quote, 60)))
    return claimed, verdict


@assertion("said-vs-did", kind="conversation", params=SaidVsDidParams, needs="judge",
           example="- said-vs-did: {claims: {book_visit: 已为您预约|预约成功}}   # or: said-vs-did: judge")
async def said_vs_did(spec: AssertionSpec, ctx: GradingContext) -> Check:
    """Each reply that claims an action comes after a call of that tool that did not error."""
    p: SaidVsDidParams = spec.params
    indexes = _reply_indexes(ctx.transcript)
    if p.mode == "judge":
        claimed, verdict = await _judged_claims(ctx, indexes)
        check = _claim_check(claimed, ctx.transcript)
        check.details = {"verdicts": [verdict.recorded()]}
        return check
    claimed = []
    for index in indexes:
        text = str(ctx.transcript[index]["content"] or "")
        for tool, pattern in (p.claims or {}).items():
            if (match := search(str(pattern), text)) is not None:
                claimed.append((index, int(ctx.transcript[index].get("turn") or 0), tool, match.group(0)))
    return _claim_check(claimed, ctx.transcript)
