"""The judge: a model asked for a JSON verdict; anything that does not parse is an error, never a verdict.

The verdict's JSON Schema goes out as `response_format` with a `max_tokens` cap (see `structured`); every
answer is read by `answers.read_answer` against the messages the model was shown, so a server that ignores
or rejects the format works too, and an object quoted from the conversation is never the verdict.
"""

from __future__ import annotations

import weakref
from typing import Any

from evalspec.core.errors import GradingError
from evalspec.extend.check import JudgeFn, JudgeRequest, JudgeVerdict
from evalspec.extend.provider import CallContext
from evalspec.providers.answers import Shown, read_answer
from evalspec.providers.calls import ProviderCaller
from evalspec.providers.structured import JUDGE_MAX_TOKENS, call_structured, call_usage, verdict_schema

BATCHING: weakref.WeakSet[Any] = weakref.WeakSet()  # the judges made with `judge: {batch: true}` (docs/en/rate-limits.md)


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
        answer = read_answer(response.content, schema, shown=Shown(request.messages), role=request.role)
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


class Jury:
    """A list of judges (`judge: [...]` with `jury: {rule, quorum}`). Called as one judge (a simulated user's
    goal check, a second opinion) it is its first member; judged checks ask every member (`ask_jury`)."""

    def __init__(self, members: list[tuple[str, JudgeFn]], rule: str = "majority", quorum: int | None = None):
        self.members = members
        self.rule = rule
        self.quorum = quorum if quorum is not None else len(members) // 2 + 1

    async def __call__(self, request: JudgeRequest) -> JudgeVerdict:
        return await self.members[0][1](request)
