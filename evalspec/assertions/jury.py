"""Juries: several judges asked the same question, their votes combined by one rule (docs/en/judges.md#juries).

Every member is asked; a member whose call or answer fails abstains (it counts in no rule); fewer answering
members than the quorum is an error, never a verdict. Each member's vote is its own samples' verdict (its
majority, or its majority level); the rules:

- `majority`: more than half of the answering members pass (a tie fails); graded levels take the median
  level (the lower of the two middle ones);
- `all` / `any`: every / at least one answering member passes;
- `mean`: the mean score (pass 1, fail 0, a level its score) reaches the threshold (default 0.5).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from evalspec.core.errors import GradingError, ProviderError
from evalspec.extend.check import Check, Evidence, JudgeFn, JudgeVerdict, say
from evalspec.providers.judge import Jury

MEAN_THRESHOLD = 0.5


def wrapped(judge: JudgeFn, wrap: Callable[[JudgeFn], JudgeFn]) -> JudgeFn:
    """`wrap(judge)`, or for a jury the same jury with each member wrapped (a jury stays a jury)."""
    if isinstance(judge, Jury):
        return Jury([(name, wrap(member)) for name, member in judge.members], judge.rule, judge.quorum)
    return wrap(judge)


@dataclass
class Vote:
    """One member's part: its verdict (`passed`, `score`, `level`, `reason`) or its `error`; `verdicts` are
    its calls (their usage is counted), `usage` those of a member that erred."""

    judge: str
    passed: bool | None = None
    score: float | None = None
    level: str | None = None
    reason: str = ""
    error: str | None = None
    verdicts: list[JudgeVerdict] | None = None
    usage: list[dict[str, Any]] | None = None

    def recorded(self) -> dict[str, Any]:
        """As the assertion result's `jury` lists it: `{judge, pass, score, reason}` or `{judge, error}`."""
        if self.error is not None:
            return {"judge": self.judge, "error": self.error}
        out: dict[str, Any] = {"judge": self.judge, "pass": self.passed, "score": self.score, "reason": self.reason}
        if self.level is not None:
            out["level"] = self.level
        return out


OneJudge = Callable[[JudgeFn], Awaitable[tuple[Check, list[JudgeVerdict]]]]


async def ask_jury(jury: Jury, one: OneJudge) -> list[Vote]:
    """Every member's vote on the same question (`one(member)`: that member's check and its calls)."""
    votes: list[Vote] = []
    for name, member in jury.members:
        try:
            check, verdicts = await one(member)
        except (GradingError, ProviderError) as exc:  # an abstention, not a failure
            votes.append(Vote(name, error=str(exc), usage=list(exc.usage) if isinstance(exc, GradingError) else []))
            continue
        level = check.details.get("level")
        votes.append(Vote(name, check.passed, float(check.score) if level is not None else float(check.passed),
                          str(level) if level is not None else None, check.reason, verdicts=verdicts))
    return votes


def decide(jury: Jury, votes: list[Vote], threshold: float | None, levels: dict[str, float] | None,
           turn: int | None) -> Check:
    """The jury's verdict from its members' votes (the module's rules); below quorum, a GradingError."""
    answered = [v for v in votes if v.error is None]
    calls = [u for v in votes for u in (v.usage or [])]
    if len(answered) < jury.quorum:
        errors = "; ".join(f"{v.judge}: {v.error}" for v in votes if v.error is not None)
        raise GradingError(say("jury_short", n=len(answered), quorum=jury.quorum, errors=errors).en,
                           usage=[*(x.usage for v in answered for x in v.verdicts or []), *calls])
    scores = [float(v.score or 0.0) for v in answered]
    passes = sum(1 for v in answered if v.passed)
    level: str | None = None
    if jury.rule == "mean":
        score = sum(scores) / len(scores)
        passed = score >= (threshold if threshold is not None else MEAN_THRESHOLD)
    elif jury.rule == "majority" and levels is not None:
        middle = sorted(answered, key=lambda v: float(v.score or 0.0))[(len(answered) - 1) // 2]
        level, score = middle.level, float(middle.score or 0.0)
        passed = score >= (threshold if threshold is not None else MEAN_THRESHOLD)
    else:
        score = passes / len(answered)
        passed = {"all": passes == len(answered), "any": passes > 0}.get(jury.rule, passes * 2 > len(answered))
    agreeing = next((v for v in answered if v.passed == passed), answered[0])
    reason = say("jury_verdict", rule=jury.rule, passed=passes, n=len(answered), members=len(votes),
                 why=agreeing.reason)
    details: dict[str, Any] = {
        "verdicts": [x.recorded() for v in answered for x in v.verdicts or []],
        "jury": [v.recorded() for v in votes],
    }
    if level is not None:
        details.update(level=level, levels=levels)
    if calls:
        details["_undecided_usage"] = calls
    return Check.of(passed, reason, [Evidence(turn, reason.en)], score=round(score, 6), details=details)
