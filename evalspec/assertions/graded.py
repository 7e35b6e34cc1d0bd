"""Model-graded and embedding-based assertions.

The judge answers with a JSON verdict (`{"reason": ..., "pass": true|false}`); scores are computed
here from the verdicts (share of passing samples), never read from prose.
"""

from __future__ import annotations

import math
from typing import Any

from evalspec.agent import tool_lines
from evalspec.assertions.base import Check, Evidence, GradingContext, Reply
from evalspec.assertions.coherence import COHERENCE_VALUE, coherence
from evalspec.assertions.registry import assertion, threshold_of
from evalspec.config.model import AssertionSpec
from evalspec.errors import GradingError

JUDGE_OPTIONS: dict[str, dict[str, Any]] = {
    "rubric": {"type": "string"}, "samples": {"type": "integer", "minimum": 1, "maximum": 15},
    "reference": {"type": "string", "description": "a reference answer shown to the judge (e.g. a golden reply)"}}
NO_VALUE = {"type": ["null", "boolean", "string"]}

JUDGE_SYSTEM = (
    "You are a strict, impartial evaluator of conversations between a user and an AI assistant. "
    "Judge only against the criterion given. Answer with a single JSON object and nothing else: "
    '{"reason": "<one or two sentences citing the turn>", "pass": true or false}'
)


def format_transcript(transcript: list[dict[str, Any]]) -> str:
    lines = []
    for m in transcript:
        if m["role"] in ("user", "assistant") and (m["content"] or not m.get("tool_calls")):
            who = "User" if m["role"] == "user" else "Assistant"
            lines.append(f"[turn {m.get('turn')}] {who}: {m['content']}")
        lines.extend(tool_lines(m))  # the judge sees the agent's tool calls and their results
    return "\n".join(lines)


def with_reference(spec: AssertionSpec, prompt: str) -> str:
    """The judge sees an assertion's `reference:` answer, when it has one."""
    reference = spec.options.get("reference")
    return f"{prompt}\n\nReference answer (for comparison, not to be copied):\n{reference}" if reference else prompt


async def _verdict(spec: AssertionSpec, ctx: GradingContext, prompt: str, turn: int | None) -> Check:
    prompt = with_reference(spec, prompt)
    if ctx.judge is None:
        raise GradingError(f"'{spec.type}' needs a judge: set `judge:` in the suite")
    samples = int(spec.options.get("samples", 1))
    verdicts = []
    for i in range(samples):
        messages = [{"role": "system", "content": JUDGE_SYSTEM}, {"role": "user", "content": prompt}]
        answer = await ctx.judge(messages, {"sample": i})
        if not isinstance(answer.get("pass"), bool):
            raise GradingError(f"judge answer has no boolean 'pass': {answer!r}")
        verdicts.append(answer)
    passes = sum(1 for v in verdicts if v["pass"])
    score = passes / samples
    majority = passes * 2 > samples
    passed = score >= spec.threshold if spec.threshold is not None else majority
    reason = str(verdicts[0].get("reason", "")) if samples == 1 else \
        f"{passes}/{samples} judge samples passed; " + str(next((v.get("reason", "") for v in verdicts if v["pass"] == majority), ""))
    return Check(passed, score, reason, [Evidence(turn, reason)], {"verdicts": verdicts})


async def judge_reply(spec: AssertionSpec, ctx: GradingContext, reply: Reply, criterion: str) -> Check:
    history = format_transcript(ctx.transcript)
    if reply.whole_conversation:
        prompt = f"Criterion: {criterion}\n\nConversation:\n{history}\n\nDoes the assistant meet the criterion over the conversation?"
    else:
        prompt = (f"Criterion: {criterion}\n\nConversation so far:\n{history}\n\n"
                  f"Reply under evaluation (turn {reply.turn}):\n{reply.text}\n\nDoes this reply meet the criterion?")
    return await _verdict(spec, ctx, prompt, reply.turn)


async def judge_conversation(spec: AssertionSpec, ctx: GradingContext, criterion: str) -> Check:
    prompt = f"Criterion: {spec.options.get('rubric') or criterion}\n\nConversation:\n{format_transcript(ctx.transcript)}\n\n" \
             "Does the assistant meet the criterion?"
    return await _verdict(spec, ctx, prompt, ctx.turn)


@assertion("llm-rubric", value={"type": "string", "minLength": 1}, options=JUDGE_OPTIONS,
           default_scope="conversation", needs="judge")
async def llm_rubric(reply: Reply, spec: AssertionSpec, ctx: GradingContext) -> Check:
    """A judge checks the reply (or the conversation) against a rubric."""
    return await judge_reply(spec, ctx, reply, spec.options.get("rubric") or str(spec.value))


def _judged(name: str, criterion: str, value: dict[str, Any] | None = None,
            options: dict[str, dict[str, Any]] | None = None, value_required: bool = False) -> None:
    async def check(spec: AssertionSpec, ctx: GradingContext) -> Check:
        text = criterion.format(value=spec.value, role=spec.options.get("role") or spec.value,
                                window=spec.options.get("window", 5))
        return await judge_conversation(spec, ctx, text)

    check.__doc__ = criterion.split(".")[0].format(value="<value>", role="<role>", window="N") + "."
    assertion(name, kind="conversation", value=value or NO_VALUE, value_required=value_required,
              options={**JUDGE_OPTIONS, **(options or {})}, needs="judge")(check)


_judged("trajectory:goal-success", "Over the whole conversation, the user's goal is achieved: {value}.",
        value={"type": "string", "minLength": 1}, value_required=True)
_judged("conversation-relevance", "Each assistant reply is relevant to the last {window} turns of the conversation.",
        options={"window": {"type": "integer", "minimum": 1, "default": 5}})
_judged("knowledge-retention", "The assistant retains facts the user gave earlier and never asks again for, "
        "or contradicts, information already provided.")
_judged("role-adherence", "The assistant stays in its assigned role throughout: {role}.",
        value={"type": ["string", "null"]}, options={"role": {"type": "string"}})
_judged("coherence", "The assistant never contradicts itself across turns.")
_judged("follows-correction", "After the user changes an instruction, goal, constraint or premise, the assistant "
        "follows the newest one, and points out when the new statement contradicts an earlier premise.")
_judged("stays-on-topic", "The assistant does not drift away from the user's first request.")
_judged("rejects-false-premise", "When the user states a false premise, the assistant points it out instead of accepting it.")


def cosine(a: list[float], b: list[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=False))
    na, nb = math.sqrt(sum(x * x for x in a)), math.sqrt(sum(y * y for y in b))
    return dot / (na * nb) if na and nb else 0.0


@assertion("similar", value={"type": "string", "minLength": 1}, default_threshold=0.8, needs="embedder")
async def similar(reply: Reply, spec: AssertionSpec, ctx: GradingContext) -> Check:
    """Cosine similarity between the reply and the value (default threshold 0.8)."""
    if ctx.embed is None:
        raise GradingError("'similar' needs an embedder: set `embedder:` in the suite")
    a, b = await ctx.embed([reply.text, str(spec.value)])
    sim = cosine(a, b)
    threshold = threshold_of(spec)
    return Check(sim >= threshold, max(0.0, sim), f"similarity {sim:.3f} (threshold {threshold})",
                 [Evidence(reply.turn, f"{sim:.3f}")], {"similarity": sim})


@assertion("topic-coherence", kind="conversation", value=COHERENCE_VALUE, value_required=False, needs="embedder")
async def topic_coherence(spec: AssertionSpec, ctx: GradingContext) -> Check:
    """Adjacent messages stay similar, the last does not drift far from the first, no reply repeats the last."""
    return await coherence(spec, ctx, cosine)
