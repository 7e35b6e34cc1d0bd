"""The judge: a model asked for a JSON verdict; anything that does not parse is an error, never a verdict.

The verdict's JSON Schema goes out as `response_format` with a `max_tokens` cap (see `structured`); the
tolerant parser below still reads every answer, so a server that ignores or rejects the format works too.
It is the one reader of every structured answer a model gives evalspec (judge, second opinion, simulated
user, attacker, context strategy): the last complete answer counts, not the first (SPEC §17).
"""

from __future__ import annotations

import json
import re
import weakref
from typing import Any

from evalspec.core.errors import GradingError
from evalspec.extend.check import JudgeFn, JudgeRequest, JudgeVerdict
from evalspec.extend.provider import CallContext
from evalspec.providers.calls import ProviderCaller
from evalspec.providers.structured import JUDGE_MAX_TOKENS, call_structured, call_usage, verdict_schema

_THINK = re.compile(r"<(think|thinking|reasoning)>.*?</\1>", re.DOTALL | re.IGNORECASE)
_THINK_CLOSE = re.compile(r"</(?:think|thinking|reasoning)>", re.IGNORECASE)
_THINK_OPEN = re.compile(r"<(?:think|thinking|reasoning)>", re.IGNORECASE)
# a format example's values: `...`, `…`, empty, `<reason>`
_PLACEHOLDER = re.compile(r"\s*(?:\.{2,}|…+|<[^<>]*>)?\s*", re.DOTALL)
_QUOTES = "\"'“‘「『«`"


BATCHING: weakref.WeakSet[Any] = weakref.WeakSet()  # the judges made with `judge: {batch: true}` (SPEC §23)


def answer_text(text: str) -> str:
    """The answer without its reasoning: `<think>…</think>` blocks dropped, the text after a lone closing
    tag (a template that opened the block itself), nothing from an opening tag never closed."""
    text = _THINK.sub(" ", text)
    closes = list(_THINK_CLOSE.finditer(text))
    if closes:
        text = text[closes[-1].end():]
    opened = _THINK_OPEN.search(text)
    return text[:opened.start()] if opened else text


def _objects(text: str) -> list[tuple[int, int, dict[str, Any]]]:
    """(start, end, object) of every outermost JSON object in `text`."""
    decoder = json.JSONDecoder(strict=False)  # a raw newline inside a string (small models write them) is text
    found = []
    i = text.find("{")
    while i != -1:
        try:
            value, end = decoder.raw_decode(text, i)
        except ValueError:
            i = text.find("{", i + 1)
            continue
        found.append((i, end, value))
        i = text.find("{", end)
    return found


def is_format_example(value: dict[str, Any]) -> bool:
    """An object with a placeholder string (`...`, `…`, empty, `<reason>`) shows the format; it decides nothing."""
    strings = [v for v in value.values() if isinstance(v, str)]
    strings += [x for v in value.values() if isinstance(v, list) for x in v if isinstance(x, str)]
    return any(_PLACEHOLDER.fullmatch(s) for s in strings)


def _quoted(text: str, start: int) -> bool:
    """Inside a code fence, a `>` quote line, or right after a quotation mark or backtick: shown, not said."""
    if text.count("```", 0, start) % 2:
        return True
    line = text[text.rfind("\n", 0, start) + 1:start]
    if line.lstrip().startswith(">"):
        return True
    before = text[:start].rstrip(" \t")
    return bool(before) and before[-1] in _QUOTES


def _decision(value: dict[str, Any], keys: list[str]) -> dict[str, Any]:
    return {k: value.get(k) for k in (keys or value) if k != "reason"}


def parse_verdict(text: str, schema: dict[str, Any] | None = None, role: str = "judge") -> dict[str, Any]:
    """The verdict: the last JSON object that has the keys `schema` requires (prose may follow it). Reasoning
    (`<think>`), fenced drafts, quoted replies and format examples before it are ignored; no verdict (a
    refusal, only a format example) or two top-level verdicts that disagree is a GradingError."""
    answer = answer_text(text)
    shown = text.strip()[:200]
    keys = [str(k) for k in (schema or {}).get("required") or (schema or {}).get("properties") or []]
    shaped = [(s, e, v) for s, e, v in _objects(answer) if all(k in v for k in keys)]
    verdicts = [(s, e, v) for s, e, v in shaped if not is_format_example(v)]
    if not verdicts:
        wanted = f" with {', '.join(keys)}" if keys else ""
        what = "only a format example (placeholder values), no answer" if shaped else \
            f"not {'a JSON verdict' if role == 'judge' else 'JSON'} (no object{wanted})"
        raise GradingError(f"{role} answer is {what}: a refusal: {shown!r}")
    verdict = verdicts[-1][2]
    decided = _decision(verdict, keys)
    for s, _, other in verdicts[:-1]:
        if not _quoted(answer, s) and _decision(other, keys) != decided:
            raise GradingError(f"{role} answer holds two verdicts that disagree "
                               f"({json.dumps(_decision(other, keys), ensure_ascii=False)} then "
                               f"{json.dumps(decided, ensure_ascii=False)}): {shown!r}")
    return dict(verdict)


PASS_SCHEMA = verdict_schema("pass", {"type": "boolean"})


async def ask(caller: ProviderCaller, request: JudgeRequest, cap: int = JUDGE_MAX_TOKENS) -> JudgeVerdict:
    """The one call every role makes on evalspec's behalf: `request`'s messages to `caller`, asking for its
    schema (structured output, `max_tokens` capped), the answer parsed unless `request.parse` is False.
    An unusable answer raises a GradingError whose `usage` lists the call's."""
    context = request.context or CallContext(thread_id="judge", test_id="judge", turn=0, repeat=request.sample + 1)
    schema = request.schema or PASS_SCHEMA
    max_tokens = request.max_tokens or cap * request.answers
    response = await call_structured(caller, request.messages, context, name=request.name, schema=schema,
                                     max_tokens=max_tokens, seed=request.seed, read=request.read)
    usage = call_usage(response)
    if not request.parse:
        return JudgeVerdict({}, response.content, usage)
    try:
        answer = parse_verdict(response.content, schema, request.role)
    except GradingError as exc:  # the call was made: its usage travels with the error, to be counted
        raise GradingError(f"{exc} (is this model usable as the {request.role}? `evalspec doctor` checks it)",
                           usage=[usage]) from None
    return JudgeVerdict(answer, response.content, usage)


def make_judge(caller: ProviderCaller, max_tokens: int | None = None) -> JudgeFn:
    """The judge over `caller` (`ask` with its `max_tokens` cap, default 512)."""
    cap = int(max_tokens or JUDGE_MAX_TOKENS)

    async def judge(request: JudgeRequest) -> JudgeVerdict:
        return await ask(caller, request, cap)

    return judge
