"""Efficiency (docs/en/memory-and-curves.md#other-conversation-quality-checks): how often the user had to correct the assistant.

A correction is a user turn (scripted or simulated; fillers and golden history excluded) that opens a
clause with a correcting phrase: 不对, 不是, 我说的是, 错了, "no,", "that's not", "I said". A phrase
counts only where a clause starts (the message start, or after punctuation), so 是不是 / 对不对 are
questions, not corrections. Score = 1 − corrections / user turns; `min` (default 0.8) is the threshold.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, ClassVar

import regex

from evalspec.config.model import AssertionSpec
from evalspec.extend.check import Check, Evidence, GradingContext, say, snippet
from evalspec.extend.params import Keywords
from evalspec.extend.registry import assertion
from evalspec.extend.transcript import written_user_turns

CORRECTING_PHRASES: tuple[str, ...] = ("不对", "不是", "我说的是", "错了", "no,", "that's not", "I said")
CLAUSE_START = r"(?:^|(?<=[.。！？!?，,；;：:…\n]))\s*[\"'“‘「（(]?\s*"
DEFAULT_MIN = 0.8


@dataclass(frozen=True)
class EfficiencyParams:
    schema_extra: ClassVar[dict[str, Any]] = {"type": ["object", "null"]}  # `efficiency:` alone is fine
    min: Annotated[float, Keywords(minimum=0, maximum=1, description="the lowest passing score (0.8)")] | None = None
    phrases: Annotated[list[Annotated[str, Keywords(minLength=1)]], Keywords(
        minItems=1, description="correcting phrases that replace the built-in zh/en list")] | None = None


def _phrase_pattern(phrase: str) -> str:
    text = "['’]".join(str(regex.escape(part)) for part in phrase.strip().replace("’", "'").split("'"))
    if regex.search(r"[\p{Latin}\p{N}]$", phrase.strip()):
        text += r"(?![\p{Latin}\p{N}])"
    return text


def correcting_phrase(text: str, phrases: list[str] | tuple[str, ...]) -> str | None:
    """The correcting phrase that opens a clause of `text`, or None."""
    alternatives = "|".join(_phrase_pattern(p) for p in sorted(phrases, key=len, reverse=True) if p.strip())
    if not alternatives:
        return None
    found = regex.search(CLAUSE_START + f"({alternatives})", text, regex.IGNORECASE)
    return str(found.group(1)) if found else None


def _efficiency(spec: AssertionSpec, ctx: GradingContext) -> Check:
    p: EfficiencyParams = spec.params
    phrases = list(p.phrases or CORRECTING_PHRASES)
    minimum = p.min if p.min is not None else spec.threshold if spec.threshold is not None else DEFAULT_MIN
    turns = written_user_turns(ctx.transcript)
    if not turns:
        return Check.of(True, say("no_user_turns"))
    evidence = []
    for m in turns:
        phrase = correcting_phrase(str(m.get("content") or ""), phrases)
        if phrase:
            evidence.append(Evidence(m.get("turn"), snippet(str(m["content"]), 120), f"correction: {phrase}"))
    score = 1 - len(evidence) / len(turns)
    reason = say("efficiency", n=len(evidence), turns=len(turns), score=f"{score:.2f}", min=f"{minimum:g}")
    return Check.of(score >= minimum, reason, evidence, score=score,
                    details={"corrections": len(evidence), "user_turns": len(turns), "min": minimum})


_efficiency.__doc__ = ("1 − corrections / user turns; a correction opens a clause with one of: "
                       + ", ".join(p if regex.search(r"\p{Han}", p) else f'"{p}"' for p in CORRECTING_PHRASES)
                       + " (`phrases` replaces them).")
efficiency = assertion("efficiency", kind="conversation", params=EfficiencyParams,
                       example="- efficiency: {min: 0.8}")(_efficiency)
