"""Topic coherence over embeddings (docs/en/memory-and-curves.md#other-conversation-quality-checks): adjacent similarity, head–tail similarity, repetition.

`include` picks the messages: the assistant's replies (default), the user's messages, or both sides in
order. Figures recorded: every adjacent similarity, their mean and variance, head–tail similarity
(first vs last message) and drift (1 − head–tail). `min_adjacent` and `max_drift` catch a conversation
that wanders; `max_adjacent` catches a bot repeating itself (adjacent replies more similar than it).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any, ClassVar, Literal

from evalspec.config.model import AssertionSpec
from evalspec.core.errors import GradingError
from evalspec.extend.check import Check, Evidence, GradingContext, Said, say
from evalspec.extend.params import Keywords
from evalspec.extend.transcript import is_system_message


@dataclass(frozen=True)
class CoherenceParams:
    schema_extra: ClassVar[dict[str, Any]] = {"type": ["object", "null"]}  # `topic-coherence:` alone is fine
    include: Annotated[Literal["assistant", "user", "both"],
                       Keywords(description="whose messages (default assistant)")] = "assistant"
    min_adjacent: Annotated[float, Keywords(description="lowest allowed mean similarity of adjacent messages")] = 0.0
    max_drift: Annotated[float, Keywords(description="highest allowed 1 − similarity(first, last)")] = 1.0
    max_adjacent: Annotated[float, Keywords(description="highest allowed similarity of two adjacent messages")] \
        | None = None


def coherence_texts(ctx: GradingContext, include: str) -> list[tuple[int | None, str]]:
    """(turn, text) of the messages `include` names, in conversation order."""
    out = []
    for m in ctx.transcript:
        role = m.get("role")
        if (include in ("assistant", "both") and is_system_message(m) and m.get("content")
                or role == "user" and include in ("user", "both") and not m.get("not_sent")):
            out.append((m.get("turn"), str(m["content"])))
    return out


async def coherence(spec: AssertionSpec, ctx: GradingContext, cosine: Callable[[list[float], list[float]], float]) -> Check:
    if ctx.embed is None:
        raise GradingError("'topic-coherence' needs an embedder: set `embedder:` in the suite")
    p: CoherenceParams = spec.params
    include = p.include
    items = coherence_texts(ctx, include)
    if len(items) < 2:
        return Check.of(True, say("fewer_than_two", include=include))
    vectors = await ctx.embed([text for _, text in items])
    adjacent = [cosine(vectors[i], vectors[i + 1]) for i in range(len(vectors) - 1)]
    mean = sum(adjacent) / len(adjacent)
    variance = sum((x - mean) ** 2 for x in adjacent) / len(adjacent)
    head_tail = cosine(vectors[0], vectors[-1])
    drift = 1 - head_tail
    worst = min(range(len(adjacent)), key=adjacent.__getitem__)
    closest = max(range(len(adjacent)), key=adjacent.__getitem__)
    problems, evidence = [], [Evidence(items[worst + 1][0], f"lowest adjacent similarity {adjacent[worst]:.3f}")]
    if mean < p.min_adjacent:
        problems.append(say("coherence_low", mean=f"{mean:.3f}", min=p.min_adjacent))
    if drift > p.max_drift:
        problems.append(say("coherence_drift", drift=f"{drift:.3f}", max=p.max_drift))
    if p.max_adjacent is not None and adjacent[closest] > p.max_adjacent:
        problems.append(say("coherence_repeats", value=f"{adjacent[closest]:.3f}", max=p.max_adjacent))
        evidence.insert(0, Evidence(items[closest + 1][0], items[closest + 1][1][:160],
                                    f"{adjacent[closest]:.3f} similar to the message before"))
    reason = say("coherence", include=include, mean=f"{mean:.3f}", variance=f"{variance:.4f}",
                 head_tail=f"{head_tail:.3f}", drift=f"{drift:.3f}", max=f"{adjacent[closest]:.3f}")
    if problems:
        reason = say("with_measures", problems=Said("; ".join(x.en for x in problems), "；".join(x.zh for x in problems)),
                     measures=reason)
    return Check.of(not problems, reason, evidence, score=max(0.0, min(1.0, mean)), details={"include": include, "adjacent_mean": mean, "adjacent_variance": variance,
                            "head_tail": head_tail, "drift": drift, "max_adjacent": adjacent[closest],
                            "adjacent": adjacent})
