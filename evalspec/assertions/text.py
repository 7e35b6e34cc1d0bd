"""Text assertions: they read one reply, or all replies joined on `conversation` scope."""

from __future__ import annotations

import json
from typing import Any

import jmespath
import jsonschema

from evalspec.assertions.base import Check, Evidence, GradingContext, Reply, search, snippet
from evalspec.assertions.registry import assertion
from evalspec.config.model import AssertionSpec
from evalspec.textutil import count_words, levenshtein

STR = {"type": ["string", "number"]}
STR_LIST = {"type": "array", "items": STR, "minItems": 1}


def _s(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _found(reply: Reply, needle: str, found: bool) -> Check:
    ev = [Evidence(reply.turn, needle if found else snippet(reply.text))]
    return Check.of(found, f"{'found' if found else 'did not find'} {needle!r}", ev)


@assertion("equals", value=STR)
def equals(reply: Reply, spec: AssertionSpec, ctx: GradingContext) -> Check:
    """The reply equals the value (surrounding whitespace ignored)."""
    ok = reply.text.strip() == _s(spec.value).strip()
    return Check.of(ok, "equal" if ok else f"expected {_s(spec.value)!r}", [Evidence(reply.turn, snippet(reply.text))])


@assertion("contains", value=STR)
def contains(reply: Reply, spec: AssertionSpec, ctx: GradingContext) -> Check:
    """The reply contains the value (case-sensitive)."""
    needle = _s(spec.value)
    return _found(reply, needle, needle in reply.text)


@assertion("icontains", value=STR)
def icontains(reply: Reply, spec: AssertionSpec, ctx: GradingContext) -> Check:
    """The reply contains the value, ignoring case."""
    needle = _s(spec.value)
    return _found(reply, needle, needle.casefold() in reply.text.casefold())


@assertion("contains-any", value=STR_LIST)
def contains_any(reply: Reply, spec: AssertionSpec, ctx: GradingContext) -> Check:
    """The reply contains at least one of the values."""
    hits = [_s(v) for v in spec.value if _s(v) in reply.text]
    if hits:
        return Check.of(True, f"found {hits[0]!r}", [Evidence(reply.turn, hits[0])])
    return Check.of(False, f"none of {' / '.join(_s(v) for v in spec.value)} found",
                    [Evidence(reply.turn, snippet(reply.text))])


@assertion("contains-all", value=STR_LIST)
def contains_all(reply: Reply, spec: AssertionSpec, ctx: GradingContext) -> Check:
    """The reply contains every value; the score is the share found."""
    wanted = [_s(v) for v in spec.value]
    missing = [w for w in wanted if w not in reply.text]
    score = 1 - len(missing) / len(wanted)
    reason = "all found" if not missing else f"missing {' / '.join(missing)}"
    return Check(not missing, score, reason, [Evidence(reply.turn, ", ".join(missing) or ", ".join(wanted), "missing" if missing else "")])


@assertion("starts-with", value=STR)
def starts_with(reply: Reply, spec: AssertionSpec, ctx: GradingContext) -> Check:
    """The reply starts with the value (leading whitespace ignored)."""
    ok = reply.text.lstrip().startswith(_s(spec.value))
    return Check.of(ok, "starts with it" if ok else f"does not start with {_s(spec.value)!r}",
                    [Evidence(reply.turn, snippet(reply.text, 60))])


@assertion("regex", value={"type": "string"}, patterns=("",))
def regex_match(reply: Reply, spec: AssertionSpec, ctx: GradingContext) -> Check:
    """The reply matches the regular expression (`regex` module, with a time-out)."""
    match = search(spec.value, reply.text)
    if match:
        return Check.of(True, f"matched {match.group(0)!r}", [Evidence(reply.turn, match.group(0))])
    return Check.of(False, f"no match for /{spec.value}/", [Evidence(reply.turn, snippet(reply.text))])


def _parse_json(text: str) -> tuple[bool, Any]:
    try:
        return True, json.loads(text)
    except ValueError:
        return False, None


def _extract_json(text: str) -> tuple[bool, Any]:
    ok, value = _parse_json(text.strip())
    if ok:
        return ok, value
    decoder = json.JSONDecoder()
    for i, ch in enumerate(text):
        if ch in "{[":
            try:
                return True, decoder.raw_decode(text, i)[0]
            except ValueError:
                continue
    return False, None


def _json_check(reply: Reply, spec: AssertionSpec, found: tuple[bool, Any]) -> Check:
    ok, value = found
    if not ok:
        return Check.of(False, "no valid JSON", [Evidence(reply.turn, snippet(reply.text))])
    if isinstance(spec.value, dict) and spec.value:
        errors = sorted(jsonschema.Draft202012Validator(spec.value).iter_errors(value), key=str)
        if errors:
            return Check.of(False, f"JSON does not match the schema: {errors[0].message}",
                            [Evidence(reply.turn, snippet(reply.text))])
    return Check.of(True, "valid JSON", [Evidence(reply.turn, snippet(reply.text, 80))])


JSON_SCHEMA_VALUE = {"type": ["object", "boolean", "null"], "description": "optional JSON Schema the JSON must match"}


@assertion("is-json", value=JSON_SCHEMA_VALUE, value_required=False)
def is_json(reply: Reply, spec: AssertionSpec, ctx: GradingContext) -> Check:
    """The whole reply is valid JSON (optionally matching a JSON Schema given as value)."""
    return _json_check(reply, spec, _parse_json(reply.text.strip()))


@assertion("contains-json", value=JSON_SCHEMA_VALUE, value_required=False)
def contains_json(reply: Reply, spec: AssertionSpec, ctx: GradingContext) -> Check:
    """The reply contains a JSON object or array (optionally matching a JSON Schema)."""
    return _json_check(reply, spec, _extract_json(reply.text))


@assertion("jmespath", value={
    "type": "object", "required": ["expr"], "additionalProperties": False,
    "properties": {"expr": {"type": "string"}, "equals": {}, "matches": {"type": "string"}},
}, patterns=("matches",))
def jmespath_check(reply: Reply, spec: AssertionSpec, ctx: GradingContext) -> Check:
    """A JMESPath expression over the JSON reply equals a value or matches a regex."""
    ok, data = _extract_json(reply.text)
    if not ok:
        return Check.of(False, "reply is not JSON", [Evidence(reply.turn, snippet(reply.text))])
    result = jmespath.search(spec.value["expr"], data)
    shown = _s(result)
    if "equals" in spec.value:
        passed = result == spec.value["equals"]
        reason = f"{spec.value['expr']} = {shown}" + ("" if passed else f", expected {_s(spec.value['equals'])}")
    elif "matches" in spec.value:
        passed = result is not None and search(spec.value["matches"], shown) is not None
        reason = f"{spec.value['expr']} = {shown}" + ("" if passed else f", does not match /{spec.value['matches']}/")
    else:
        passed = result not in (None, False, [], {}, "")
        reason = f"{spec.value['expr']} = {shown}"
    return Check.of(passed, reason, [Evidence(reply.turn, shown)])


@assertion("word-count", value={
    "type": "object", "additionalProperties": False, "minProperties": 1,
    "properties": {"min": {"type": "integer", "minimum": 0}, "max": {"type": "integer", "minimum": 0}},
})
def word_count(reply: Reply, spec: AssertionSpec, ctx: GradingContext) -> Check:
    """Word count within {min, max}; each CJK character counts as one word."""
    n = count_words(reply.text)
    lo, hi = spec.value.get("min"), spec.value.get("max")
    ok = (lo is None or n >= lo) and (hi is None or n <= hi)
    return Check(ok, 1.0 if ok else 0.0, f"{n} words (min {lo}, max {hi})",
                 [Evidence(reply.turn, snippet(reply.text, 80), f"{n} words")], {"words": n})


@assertion("levenshtein", value={
    "type": "object", "required": ["value", "max"], "additionalProperties": False,
    "properties": {"value": STR, "max": {"type": "integer", "minimum": 0}},
})
def levenshtein_check(reply: Reply, spec: AssertionSpec, ctx: GradingContext) -> Check:
    """Edit distance between the reply and value is at most max."""
    d = levenshtein(reply.text.strip(), _s(spec.value["value"]).strip())
    ok = d <= spec.value["max"]
    return Check(ok, 1.0 if ok else 0.0, f"edit distance {d} (max {spec.value['max']})",
                 [Evidence(reply.turn, snippet(reply.text, 80))], {"distance": d})


NUMBER = {"type": "number", "minimum": 0}


def _at_most(reply: Reply, measured: float | None, limit: float, unit: str) -> Check:
    if measured is None:
        return Check.of(False, f"no {unit} recorded for this reply", [Evidence(reply.turn, "")])
    ok = measured <= limit
    shown = f"{measured:g} {unit}"
    return Check(ok, 1.0 if ok else 0.0, f"{shown} (max {limit:g})", [Evidence(reply.turn, shown)], {unit: measured})


@assertion("latency", value=NUMBER)
def latency(reply: Reply, spec: AssertionSpec, ctx: GradingContext) -> Check:
    """The reply took at most value milliseconds."""
    return _at_most(reply, reply.latency_ms, float(spec.value), "ms")


@assertion("cost", value=NUMBER)
def cost(reply: Reply, spec: AssertionSpec, ctx: GradingContext) -> Check:
    """The reply cost at most value (USD); on `conversation` scope, the total."""
    return _at_most(reply, reply.cost, float(spec.value), "USD")


@assertion("tokens", value=NUMBER)
def tokens(reply: Reply, spec: AssertionSpec, ctx: GradingContext) -> Check:
    """The reply used at most value tokens; on `conversation` scope, the total."""
    return _at_most(reply, reply.tokens, float(spec.value), "tokens")
