"""Text assertions: they read one reply, or all replies joined on `conversation` scope."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Annotated, Any, ClassVar

import jmespath
import jsonschema

from evalspec.config.model import AssertionSpec
from evalspec.core.errors import GradingError
from evalspec.core.text import Normalized, count_words, find_json, levenshtein, normalized
from evalspec.extend.check import Check, Evidence, GradingContext, Reply, Said, say, snippet
from evalspec.extend.params import UNSET, Keywords, Normalize, Regex
from evalspec.extend.patterns import search
from evalspec.extend.provider import normalize_finish_reason
from evalspec.extend.registry import assertion

Text = str | float  # a number written in YAML counts as its text


@dataclass(frozen=True)
class TextParams:  # equals, contains, icontains, starts-with: the value is the text
    value_field: ClassVar[str] = "text"
    text: Text
    normalize: Normalize = None


@dataclass(frozen=True)
class TextsParams:  # contains-any, contains-all
    value_field: ClassVar[str] = "texts"
    texts: Annotated[list[Text], Keywords(minItems=1)]
    normalize: Normalize = None


@dataclass(frozen=True)
class RegexParams:
    value_field: ClassVar[str] = "pattern"
    pattern: Regex
    normalize: Normalize = None


@dataclass(frozen=True)
class JsonParams:  # is-json, contains-json
    value_field: ClassVar[str] = "schema"
    schema: Annotated[dict[str, Any] | bool | None,
                      Keywords(description="optional JSON Schema the JSON must match")] = None


@dataclass(frozen=True)
class JmespathParams:
    expr: str
    equals: Any = UNSET
    matches: Regex | None = None


@dataclass(frozen=True)
class CountRange:  # word-count, turn-count
    schema_extra: ClassVar[dict[str, Any]] = {"minProperties": 1}
    min: Annotated[int, Keywords(minimum=0)] | None = None
    max: Annotated[int, Keywords(minimum=0)] | None = None

    def holds(self, n: int) -> bool:
        return (self.min is None or n >= self.min) and (self.max is None or n <= self.max)


@dataclass(frozen=True)
class LevenshteinParams:
    value: Text
    max: Annotated[int, Keywords(minimum=0)]
    normalize: Normalize = None


@dataclass(frozen=True)
class LimitParams:  # latency (ms), cost (USD), tokens
    value_field: ClassVar[str] = "limit"
    limit: Annotated[float, Keywords(minimum=0)]


@dataclass(frozen=True)
class FinishReasonParams:
    value_field: ClassVar[str] = "reason"
    reason: Annotated[str, Keywords(minLength=1, pattern=r"\S", description=(
        "stop, length, content_filter or tool_calls (a provider's own word for one of them, such as "
        "end_turn, max_tokens or tool_use, means it), or another word a provider reports"))]


def _s(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def read(reply: Reply, spec: AssertionSpec, *also: str) -> Normalized:
    """The reply as this check reads it: normalized as its `normalize:` says (plus `also`), with the way
    back to the reply as written for the evidence. The one path of every text check."""
    names = spec.params.normalize
    given = [names] if isinstance(names, str) else list(names or ())
    return normalized(reply.text, [*given, *also])


def _quoted(seen: Normalized, start: int, end: int) -> Said:
    """What the check found, as the bot wrote it; the normalized form beside it when they differ."""
    original, read_as = seen.source(start, end), seen.text[start:end]
    return say("quoted", text=repr(original)) if original == read_as else \
        say("quoted_read_as", text=repr(original), read_as=repr(read_as))


def _find(seen: Normalized, needle: str) -> tuple[int, int] | None:
    at = seen.text.find(needle)
    return None if at < 0 else (at, at + len(needle))


def _found(reply: Reply, seen: Normalized, needle: str, span: tuple[int, int] | None) -> Check:
    if span is None:
        return Check.of(False, say("not_found", text=repr(needle)), [Evidence(reply.turn, snippet(reply.text))])
    return Check.of(True, say("found", what=_quoted(seen, *span)), [Evidence(reply.turn, seen.source(*span))])


@assertion("equals", params=TextParams,
           example="- equals: 好的")
def equals(reply: Reply, spec: AssertionSpec, ctx: GradingContext) -> Check:
    """The reply equals the value (surrounding whitespace ignored)."""
    text = _s(spec.params.text)
    ok = read(reply, spec).text.strip() == text.strip()
    return Check.of(ok, say("equal") if ok else say("expected", text=repr(text)), [Evidence(reply.turn, snippet(reply.text))])


@assertion("contains", params=TextParams,
           example="- contains: 分期")
def contains(reply: Reply, spec: AssertionSpec, ctx: GradingContext) -> Check:
    """The reply contains the value (case-sensitive)."""
    needle, seen = _s(spec.params.text), read(reply, spec)
    return _found(reply, seen, needle, _find(seen, needle))


@assertion("icontains", params=TextParams,
           example="- icontains: vip")
def icontains(reply: Reply, spec: AssertionSpec, ctx: GradingContext) -> Check:
    """The reply contains the value, ignoring case."""
    needle, seen = _s(spec.params.text), read(reply, spec, "casefold")
    return _found(reply, seen, needle, _find(seen, needle.casefold()))


@assertion("contains-any", params=TextsParams,
           example="- contains-any: [到店, 预约, 试驾]")
def contains_any(reply: Reply, spec: AssertionSpec, ctx: GradingContext) -> Check:
    """The reply contains at least one of the values."""
    wanted, seen = [_s(v) for v in spec.params.texts], read(reply, spec)
    for needle in wanted:
        if span := _find(seen, needle):
            return Check.of(True, say("found", what=_quoted(seen, *span)), [Evidence(reply.turn, seen.source(*span))])
    return Check.of(False, say("none_found", texts=" / ".join(wanted)), [Evidence(reply.turn, snippet(reply.text))])


@assertion("contains-all", params=TextsParams,
           example="- contains-all: [首付, 月供]")
def contains_all(reply: Reply, spec: AssertionSpec, ctx: GradingContext) -> Check:
    """The reply contains every value; the score is the share found."""
    wanted, seen = [_s(v) for v in spec.params.texts], read(reply, spec)
    missing = [w for w in wanted if w not in seen.text]
    score = 1 - len(missing) / len(wanted)
    reason = say("all_found") if not missing else say("missing", texts=" / ".join(missing))
    return Check.of(not missing, reason, score=score, evidence=[Evidence(reply.turn, ", ".join(missing) or ", ".join(wanted), "missing" if missing else "")])


@assertion("starts-with", params=TextParams,
           example="- starts-with: 您好")
def starts_with(reply: Reply, spec: AssertionSpec, ctx: GradingContext) -> Check:
    """The reply starts with the value (leading whitespace ignored)."""
    text = _s(spec.params.text)
    ok = read(reply, spec).text.lstrip().startswith(text)
    return Check.of(ok, say("starts_with") if ok else say("not_starts_with", text=repr(text)),
                    [Evidence(reply.turn, snippet(reply.text, 60))])


@assertion("regex", params=RegexParams,
           example="- regex: '\\d+(\\.\\d+)?万'")
def regex_match(reply: Reply, spec: AssertionSpec, ctx: GradingContext) -> Check:
    """The reply matches the regular expression (`regex` module, with a time-out)."""
    pattern, seen = spec.params.pattern, read(reply, spec)
    match = search(pattern, seen.text)
    if match:
        span = match.span()
        return Check.of(True, say("matched", what=_quoted(seen, *span)), [Evidence(reply.turn, seen.source(*span))])
    return Check.of(False, say("no_match", pattern=pattern), [Evidence(reply.turn, snippet(reply.text))])


def _parse_json(text: str) -> tuple[bool, Any]:
    try:
        return True, json.loads(text)
    except ValueError:
        return False, None


def _json_check(reply: Reply, spec: AssertionSpec, found: tuple[bool, Any]) -> Check:
    ok, value = found
    if not ok:
        return Check.of(False, say("no_json"), [Evidence(reply.turn, snippet(reply.text))])
    schema = spec.params.schema
    if isinstance(schema, dict) and schema:
        errors = sorted(jsonschema.Draft202012Validator(schema).iter_errors(value), key=str)
        if errors:
            return Check.of(False, say("json_schema", error=errors[0].message),
                            [Evidence(reply.turn, snippet(reply.text))])
    return Check.of(True, say("valid_json"), [Evidence(reply.turn, snippet(reply.text, 80))])


@assertion("is-json", params=JsonParams,
           example="- is-json:")
def is_json(reply: Reply, spec: AssertionSpec, ctx: GradingContext) -> Check:
    """The whole reply is valid JSON (optionally matching a JSON Schema given as value)."""
    return _json_check(reply, spec, _parse_json(reply.text.strip()))


@assertion("contains-json", params=JsonParams,
           example="- contains-json: {type: object, required: [price]}")
def contains_json(reply: Reply, spec: AssertionSpec, ctx: GradingContext) -> Check:
    """The reply contains a JSON object or array (optionally matching a JSON Schema)."""
    return _json_check(reply, spec, find_json(reply.text))


@assertion("jmespath", params=JmespathParams,
           example="- jmespath: {expr: price, matches: '^\\d+'}")
def jmespath_check(reply: Reply, spec: AssertionSpec, ctx: GradingContext) -> Check:
    """A JMESPath expression over the JSON reply equals a value or matches a regex."""
    ok, data = find_json(reply.text)
    if not ok:
        return Check.of(False, say("reply_not_json"), [Evidence(reply.turn, snippet(reply.text))])
    p: JmespathParams = spec.params
    result = jmespath.search(p.expr, data)
    shown = _s(result)
    if p.equals is not UNSET:
        passed = result == p.equals
        reason = say("expr_is", expr=p.expr, value=shown) if passed else \
            say("expr_expected", expr=p.expr, value=shown, expected=_s(p.equals))
    elif p.matches is not None:
        passed = result is not None and search(p.matches, shown) is not None
        reason = say("expr_is", expr=p.expr, value=shown) if passed else \
            say("expr_no_match", expr=p.expr, value=shown, pattern=p.matches)
    else:
        passed = result not in (None, False, [], {}, "")
        reason = say("expr_is", expr=p.expr, value=shown)
    return Check.of(passed, reason, [Evidence(reply.turn, shown)])


@assertion("word-count", params=CountRange,
           example="- word-count: {min: 5, max: 200}")
def word_count(reply: Reply, spec: AssertionSpec, ctx: GradingContext) -> Check:
    """Word count within {min, max}; each CJK character counts as one word."""
    n, bounds = count_words(reply.text), spec.params
    ok = bounds.holds(n)
    return Check.of(ok, say("words", n=n, min=bounds.min, max=bounds.max),
                    [Evidence(reply.turn, snippet(reply.text, 80), f"{n} words")], details={"words": n})


@assertion("levenshtein", params=LevenshteinParams,
           example="- levenshtein: {value: 您好，请问有什么可以帮您？, max: 5}")
def levenshtein_check(reply: Reply, spec: AssertionSpec, ctx: GradingContext) -> Check:
    """Edit distance between the reply and value is at most max."""
    p: LevenshteinParams = spec.params
    d = levenshtein(read(reply, spec).text.strip(), _s(p.value).strip())
    ok = d <= p.max
    return Check.of(ok, say("edit_distance", n=d, max=p.max), [Evidence(reply.turn, snippet(reply.text, 80))],
                    details={"distance": d})


def _at_most(reply: Reply, measured: float | None, limit: float, unit: str) -> Check:
    if measured is None:
        return Check.of(False, say("not_recorded", unit=unit), [Evidence(reply.turn, "")])
    ok = measured <= limit
    shown = f"{measured:g} {unit}"
    return Check.of(ok, say("at_most_measured", value=shown, max=f"{limit:g}"), [Evidence(reply.turn, shown)],
                    details={unit: measured})


@assertion("latency", params=LimitParams,
           example=("- latency: 3000\n"
                    "  scope: each_turn      # every reply within 3 s"))
def latency(reply: Reply, spec: AssertionSpec, ctx: GradingContext) -> Check:
    """The reply took at most value milliseconds."""
    return _at_most(reply, reply.latency_ms, float(spec.params.limit), "ms")


@assertion("cost", params=LimitParams,
           example=("- cost: 0.002\n"
                    "  scope: conversation   # the whole conversation's cost, in USD"))
def cost(reply: Reply, spec: AssertionSpec, ctx: GradingContext) -> Check:
    """The reply cost at most value (USD); on `conversation` scope, the total."""
    return _at_most(reply, reply.cost, float(spec.params.limit), "USD")


@assertion("tokens", params=LimitParams,
           example="- tokens: 400")
def tokens(reply: Reply, spec: AssertionSpec, ctx: GradingContext) -> Check:
    """The reply used at most value tokens; on `conversation` scope, the total."""
    return _at_most(reply, reply.tokens, float(spec.params.limit), "tokens")


@assertion("finish-reason", params=FinishReasonParams, one_reply=True,
           example="- finish-reason: stop       # not cut at the token limit (length) nor filtered")
def finish_reason(reply: Reply, spec: AssertionSpec, ctx: GradingContext) -> Check:
    """The model stopped for this reason: stop, length (cut at its token limit), content_filter or tool_calls."""
    expected = normalize_finish_reason(str(spec.params.reason))
    found = normalize_finish_reason(reply.finish_reason)  # None on `conversation` scope too (validate refuses it)
    if found is None:  # never a pass or a fail, negated or not: nothing says why the model stopped
        who = f"provider '{ctx.provider}'" if ctx.provider else "the provider"
        raise GradingError(f"turn {reply.turn}: no finish reason recorded for the reply ({who} reported none)")
    passed = found == expected
    reason = say("finish_reason", found=repr(found)) if passed else \
        say("finish_reason_expected", found=repr(found), expected=repr(expected))
    return Check.of(passed, reason, [Evidence(reply.turn, found)])
