"""Tool-call assertions (docs/en/agents.md): which tools an agent called, how often, in what order, with what arguments.

On a reply scope they read the calls made during that turn (its tool rounds included); on
`conversation` (their default at test level) every call of the transcript.
`tool-sequence` has agentevals' four trajectory-match modes, with the agent's calls compared to
`calls` as the reference: `strict` (the same calls in the same order), `unordered` (the same calls,
each matched once, in any order), `subset` (the agent called nothing outside the reference),
`superset` (the agent called at least every reference call).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, Any, ClassVar, Literal

import jsonschema

from evalspec.assertions.text import CountRange
from evalspec.config.model import AssertionSpec
from evalspec.core.errors import GradingError, ProviderError
from evalspec.extend.check import Check, Evidence, GradingContext, Reply, Said, say
from evalspec.extend.params import Keywords, Option
from evalspec.extend.patterns import fullmatch
from evalspec.extend.registry import assertion
from evalspec.extend.transcript import ToolCall
from evalspec.providers.tool_rounds import call_text, load_tools, tool_schema

Call = tuple[int | None, ToolCall]

Name = Annotated[str, Keywords(minLength=1)]
Args = Annotated[dict[str, Any], Keywords(description="expected arguments, a subset match ('re:...' is a full-match regex)")]
Mode = Literal["strict", "unordered", "subset", "superset"]


@dataclass(frozen=True)
class CallRef:  # a call the agent should make: its tool, and the arguments it should carry
    name: Name
    args: Args | None = None


@dataclass(frozen=True)
class ToolCalledParams:
    short_field: ClassVar[str] = "name"
    name: Name
    args: Args | None = None
    count: CountRange | None = None


@dataclass(frozen=True)
class NotCalledParams:
    value_field: ClassVar[str] = "names"
    names: Name | Annotated[list[Name], Keywords(minItems=1)]


@dataclass(frozen=True)
class SequenceParams:
    calls: list[Name | CallRef]
    mode: Annotated[Mode | None, Option(in_value=True)] = None


@dataclass(frozen=True)
class ArgsValidParams:  # the value says nothing: `tool-args-valid:` or `tool-args-valid: true`
    value_field: ClassVar[str] = "enabled"
    enabled: bool | None | Annotated[dict[str, Any], Keywords(maxProperties=0)] = None


def calls_for(reply: Reply, ctx: GradingContext) -> list[Call]:
    """The calls an assertion reads on this reply's scope."""
    return ctx.tool_calls(None if reply.whole_conversation else reply.turn)


def _where(reply: Reply) -> Said:
    return say("in_conversation") if reply.whole_conversation else say("in_turn", turn=reply.turn)


def value_matches(expected: Any, actual: Any) -> bool:
    """Subset match: mappings recursively by key; 're:' strings as full-match regexes; else equality."""
    if isinstance(expected, str) and expected.startswith("re:"):
        text = actual if isinstance(actual, str) else call_text({"name": "", "arguments": actual})[1:-1]
        return fullmatch(expected[3:], text) is not None
    if isinstance(expected, dict):
        return isinstance(actual, dict) and all(k in actual and value_matches(v, actual[k]) for k, v in expected.items())
    if isinstance(expected, bool) or isinstance(actual, bool):
        return expected is actual
    return bool(expected == actual)


def call_matches(ref: str | CallRef, call: Mapping[str, Any]) -> bool:
    """A reference (a tool name, or {name, args}) matches a call."""
    if isinstance(ref, str):
        return bool(call["name"] == ref)
    return bool(call["name"] == ref.name) and value_matches(ref.args or {}, call["arguments"])


def _evidence(calls: list[Call]) -> list[Evidence]:
    return [Evidence(turn, call_text(c)) for turn, c in calls]


@assertion("tool-called", default_scope="conversation", params=ToolCalledParams,
           example="- tool-called: {name: lookup_stock, args: {model: 瑶光, city: 're:北京|上海'}, count: {max: 1}}")
def tool_called(reply: Reply, spec: AssertionSpec, ctx: GradingContext) -> Check:
    """The tool `name` was called (with `args`, a subset match) between count.min (default 1) and count.max times."""
    p: ToolCalledParams = spec.params
    ref = CallRef(p.name, p.args)
    count = p.count or CountRange(min=1)
    lo, hi = count.min or 0, count.max
    calls = calls_for(reply, ctx)
    hits = [(t, c) for t, c in calls if call_matches(ref, c)]
    n = len(hits)
    wanted = ref.name + (f" with {call_text({'name': '', 'arguments': ref.args})[1:-1]}" if ref.args else "")
    bounds_said = say("at_least", n=lo) if hi is None else say("exactly", n=lo) if lo == hi else \
        say("between", lo=lo, hi=hi)
    if lo <= n and (hi is None or n <= hi):
        return Check.of(True, say("tool_called", tool=wanted, n=n, where=_where(reply), bounds=bounds_said),
                        _evidence(hits))
    same_name = [(t, c) for t, c in calls if c["name"] == ref.name]
    shown = hits if n else (same_name or calls)
    note = say("empty") if n or not same_name else say("tool_other_args", n=len(same_name), tool=ref.name)
    return Check.of(False, say("tool_called_expected", tool=wanted, n=n, where=_where(reply), bounds=bounds_said,
                               note=note, none=say("empty") if calls else say("no_tool_calls")), _evidence(shown))


@assertion("not-tool-called", default_scope="conversation", params=NotCalledParams,
           example="- not-tool-called: [send_coupon, book_test_drive]")
def not_tool_called(reply: Reply, spec: AssertionSpec, ctx: GradingContext) -> Check:
    """None of the named tools was called."""
    given = spec.params.names
    names = [given] if isinstance(given, str) else list(given)
    hits = [(t, c) for t, c in calls_for(reply, ctx) if c["name"] in names]
    if hits:
        return Check.of(False, say("tool_was_called", tool=hits[0][1]["name"], where=_where(reply),
                                   at=say("at_turn", turn=hits[0][0]) if reply.whole_conversation else say("empty")),
                        _evidence(hits))
    return Check.of(True, say("tools_not_called", tools=", ".join(names), where=_where(reply)))


@assertion("tool-sequence", default_scope="conversation", params=SequenceParams,
           example="- tool-sequence: {calls: [lookup_stock, book_test_drive], mode: strict}")
def tool_sequence(reply: Reply, spec: AssertionSpec, ctx: GradingContext) -> Check:
    """The agent's calls match `calls` as a trajectory: strict | unordered | subset | superset (agentevals' modes)."""
    p: SequenceParams = spec.params
    mode = p.mode or "strict"
    refs = list(p.calls)
    calls = calls_for(reply, ctx)
    actual = [c for _, c in calls]
    names = ", ".join(c["name"] for c in actual) or "no calls"
    expected = ", ".join(r if isinstance(r, str) else r.name for r in refs) or "no calls"
    if mode == "strict":
        ok = len(actual) == len(refs) and all(call_matches(r, c) for r, c in zip(refs, actual, strict=True))
        missing = "" if ok else _first_difference(refs, actual)
    elif mode == "superset":
        left = _unmatched(refs, actual)
        ok, missing = not left, f"missing {_ref_text(left[0])}" if left else ""
    elif mode == "subset":
        extra = _unmatched_calls(refs, actual)
        ok, missing = not extra, f"{call_text(extra[0])} is outside the reference" if extra else ""
    else:
        left, extra = _unmatched(refs, actual), _unmatched_calls(refs, actual)
        ok = not left and not extra
        missing = f"missing {_ref_text(left[0])}" if left else (f"unexpected {call_text(extra[0])}" if extra else "")
    reason = say("tool_sequence", mode=mode, names=names, expected=expected)
    return Check.of(ok, reason if ok else say("with_detail", reason=reason, detail=missing), _evidence(calls))


def _ref_text(ref: str | CallRef) -> str:
    return ref if isinstance(ref, str) else call_text({"name": ref.name, "arguments": ref.args})


def _pairing(refs: list[Any], calls: list[ToolCall]) -> tuple[list[Any], set[int]]:
    """Match each reference to a distinct call (agentevals' superset matching); unmatched refs, used calls."""
    used: set[int] = set()
    left = []
    for ref in refs:
        index = next((i for i, c in enumerate(calls) if i not in used and call_matches(ref, c)), None)
        if index is None:
            left.append(ref)
        else:
            used.add(index)
    return left, used


def _unmatched(refs: list[Any], calls: list[ToolCall]) -> list[Any]:
    return _pairing(refs, calls)[0]


def _unmatched_calls(refs: list[Any], calls: list[ToolCall]) -> list[ToolCall]:
    """Calls that no distinct reference entry accounts for (the agent went outside the reference)."""
    used: set[int] = set()
    extra = []
    for call in calls:
        index = next((i for i, r in enumerate(refs) if i not in used and call_matches(r, call)), None)
        if index is None:
            extra.append(call)
        else:
            used.add(index)
    return extra


def _first_difference(refs: list[Any], calls: list[ToolCall]) -> str:
    for i, (ref, call) in enumerate(zip(refs, calls, strict=False), 1):
        if not call_matches(ref, call):
            return f"call {i} is {call_text(call)}, expected {_ref_text(ref)}"
    if len(calls) > len(refs):
        return f"unexpected call {len(refs) + 1}: {call_text(calls[len(refs)])}"
    return f"missing call {len(calls) + 1}: {_ref_text(refs[len(calls)])}"


@assertion("tool-args-valid", default_scope="conversation", params=ArgsValidParams,
           example="- tool-args-valid:")
def tool_args_valid(reply: Reply, spec: AssertionSpec, ctx: GradingContext) -> Check:
    """Every call's arguments validate against the declared tool's JSON Schema (an undeclared tool fails)."""
    try:
        tools = load_tools(ctx.tools, ctx.suite_dir)
    except ProviderError as exc:
        raise GradingError(str(exc)) from None
    calls = calls_for(reply, ctx)
    bad: list[Evidence] = []
    for turn, call in calls:
        schema = tool_schema(tools, call["name"])
        if schema is None:
            bad.append(Evidence(turn, call_text(call), "not a declared tool" if tools else "the provider declares no tools"))
            continue
        errors = sorted(jsonschema.Draft202012Validator(schema).iter_errors(call["arguments"]), key=lambda e: list(e.path))
        if errors:
            at = "/".join(str(p) for p in errors[0].absolute_path)
            bad.append(Evidence(turn, call_text(call), (f"{at}: " if at else "") + errors[0].message))
    if bad:
        return Check.of(False, say("tool_args_invalid", bad=len(bad), n=len(calls), call=bad[0].text, why=bad[0].note), bad)
    return Check.of(True, say("tool_args_valid", n=len(calls), where=_where(reply)), _evidence(calls))
