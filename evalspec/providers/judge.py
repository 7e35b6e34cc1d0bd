"""The judge: a model asked for a JSON verdict; anything that does not parse is an error, never a verdict.

The verdict's JSON Schema goes out as `response_format` with a `max_tokens` cap (see `structured`); the
tolerant parser below still reads every answer, so a server that ignores or rejects the format works too.
"""

from __future__ import annotations

from typing import Any

from evalspec.assertions.base import JudgeFn
from evalspec.errors import GradingError
from evalspec.providers.base import CallContext
from evalspec.providers.calls import ProviderCaller
from evalspec.providers.structured import JUDGE_MAX_TOKENS, call_structured, verdict_schema
from evalspec.textutil import find_json


def parse_verdict(text: str) -> dict[str, Any]:
    """The first JSON object in `text` (bare, inside a code fence, or surrounded by prose)."""
    found, value = find_json(text, objects_only=True)
    if not found:
        raise GradingError(f"judge answer is not a JSON verdict: {text.strip()[:200]!r}")
    return dict(value)


PASS_SCHEMA = verdict_schema("pass", {"type": "boolean"})


def make_judge(caller: ProviderCaller, max_tokens: int | None = None) -> JudgeFn:
    """A judge over `caller`. `meta` may carry `sample` (the sample number) and `schema` (the answer's
    JSON Schema; default `{"reason", "pass"}`)."""
    cap = int(max_tokens or JUDGE_MAX_TOKENS)

    async def judge(messages: list[dict[str, str]], meta: dict[str, Any]) -> dict[str, Any]:
        sample = int(meta.get("sample", 0))
        context = CallContext(thread_id="judge", test_id="judge", turn=0, repeat=sample + 1)
        response = await call_structured(caller, messages, context, name=str(meta.get("name", "verdict")),
                                         schema=meta.get("schema") or PASS_SCHEMA, max_tokens=cap)
        verdict = parse_verdict(response.content)
        verdict.setdefault("_judge", {"tokens": response.tokens, "cost": response.cost, "cached": response.cached})
        return verdict

    return judge
