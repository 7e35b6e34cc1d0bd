"""`select-best`: a judge compares the replies one test got from its candidates and picks the best.

The candidates are the test's records of one repeat: every provider × matrix instance. The check is not
decided on one transcript (`grade` leaves it pending); once every candidate has finished, `play.compare`
calls `pick_best` for them all: the judge is asked twice, the candidates in order and then in reverse
order (docs/en/judges.md#comparing-two-bot-versions-pairwise); the chosen record passes, the others fail.
No verdict is reached (an error on every candidate) when a candidate's conversation ended in an error,
when there are fewer than two, when the judge's answer is not one candidate's index, or when the two
orders chose different candidates (position-inconsistent).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Annotated, Any, ClassVar

from evalspec.assertions.across import PENDING
from evalspec.config.model import SELECT_BEST, AssertionSpec
from evalspec.core.errors import EvalspecError, GradingError
from evalspec.core.usercode import describe
from evalspec.extend.check import (
    Check,
    Evidence,
    GradingContext,
    JudgeFn,
    JudgeRequest,
    JudgeVerdict,
    Reply,
    say,
    snippet,
)
from evalspec.extend.params import Keywords
from evalspec.extend.registry import assertion
from evalspec.extend.transcript import Message, replies
from evalspec.providers.structured import verdict_schema
from evalspec.providers.tool_rounds import call_text

_TAG = re.compile(r"<(/?candidate)", re.IGNORECASE)


@dataclass(frozen=True, kw_only=True)
class SelectBestParams:
    value_field: ClassVar[str] = "criterion"
    criterion: Annotated[str, Keywords(minLength=1, description="what makes one reply better than the others")]


@assertion(SELECT_BEST, params=SelectBestParams, needs="judge",
           example="- select-best: 哪个回答最清楚地说明了首付和月供   # the best candidate passes, the others fail")
async def select_best(reply: Reply, spec: AssertionSpec, ctx: GradingContext) -> Check:
    """A judge compares the replies of the test's providers and matrix instances (per repeat): the best passes, the others fail."""
    raise GradingError(PENDING)


@dataclass(frozen=True)
class Candidate:
    """One record under comparison: who it is (`label`, for the evidence), its transcript, and the error
    its conversation ended in, if it did."""

    label: str
    transcript: list[Message]
    error: str | None = None


def shown(spec: AssertionSpec, candidate: Candidate) -> str:
    """What the judge reads of a candidate: its final reply, or (scope `conversation`) the transcript."""
    if spec.scope == "conversation":
        from evalspec.assertions.graded import format_transcript  # loaded when a check is judged

        text = format_transcript(candidate.transcript)
    else:
        last = replies(candidate.transcript)[-1]
        calls = [f"(called tool {call_text(c)})" for c in last.get("tool_calls") or []]  # a call is no empty reply
        text = "\n".join([str(last.get("content") or ""), *calls]).strip()
    return _TAG.sub(r"&lt;\1", text)  # a reply can neither close its block nor open another


def _question(spec: AssertionSpec, shown: list[str]) -> str:
    n = len(shown)
    what = "conversations" if spec.scope == "conversation" else "final replies"
    blocks = "\n\n".join(f'<candidate index="{i}">\n{text}\n</candidate>' for i, text in enumerate(shown))
    return (f"Criterion: {spec.params.criterion}\n\nHere are {n} candidates: the {what} that different systems "
            f"or prompt variants gave in the same test.\n\n{blocks}\n\nWhich candidate best meets the criterion? "
            f'Answer with a JSON object with two keys: "reason" (one or two sentences of your own) and "best" '
            f"(the index of the best candidate: one integer from 0 to {n - 1}).")


def _index(answer: Mapping[str, object], n: int) -> int:
    best = answer.get("best")
    if isinstance(best, str) and best.strip().isdigit():  # "1" from a model that ignores the schema's type
        best = int(best.strip())
    if isinstance(best, bool) or not isinstance(best, int):
        raise GradingError(f"judge answer has no integer 'best': {answer!r}")
    if not 0 <= best < n:
        raise GradingError(f"judge chose candidate {best}, which is not one of the {n} (0 to {n - 1})")
    return best


@dataclass
class Comparison:
    """`pick_best`'s answer: a check per candidate, in order, or the `error` that kept the judge from
    choosing; `usage` lists the judge calls' (counted on the first candidate)."""

    checks: list[Check]
    error: str | None = None
    usage: list[dict[str, Any]] = field(default_factory=list)


async def pick_best(spec: AssertionSpec, candidates: list[Candidate], judge: JudgeFn | None) -> Comparison:
    """Two judge calls, the candidates in order and reversed, pick the best candidate (pass, score 1); the
    others fail (score 0); the reason and the chosen candidate are the evidence. Any failure to decide is an error, never a pass or a fail."""
    from evalspec.assertions.graded import JUDGE_SYSTEM  # the judged checks: loaded when one is judged

    if len(candidates) < 2:
        only = f" ({candidates[0].label})" if candidates else ""
        return Comparison([], f"needs at least two candidates to compare; this run has {len(candidates)}{only}: "
                              "a --provider or --filter left the others out")
    for c in candidates:
        if c.error is not None or not replies(c.transcript):
            return Comparison([], f"not compared: candidate {c.label} " +
                              (f"ended in an error ({c.error})" if c.error is not None else "has no reply"))
    if judge is None:
        return Comparison([], "'select-best' needs a judge: set `judge:` in the suite")
    texts = [shown(spec, c) for c in candidates]
    # an enum, not minimum/maximum: every structured-output server (llama.cpp's grammars too) honours it
    n = len(candidates)
    # an enum, not minimum/maximum: every structured-output server (llama.cpp's grammars too) honours it
    schema = verdict_schema("best", {"type": "integer", "enum": list(range(n))})
    verdicts: list[JudgeVerdict] = []
    picks: list[int] = []
    try:
        for order in (list(range(n)), list(range(n))[::-1]):  # both orders: a judge's position bias shows
            request = JudgeRequest([{"role": "system", "content": JUDGE_SYSTEM},
                                    {"role": "user", "content": _question(spec, [texts[i] for i in order])}],
                                   schema=schema, name="best_candidate")
            verdicts.append(await judge(request))
            picks.append(order[_index(verdicts[-1].answer, n)])
    except GradingError as exc:
        return Comparison([], str(exc), [v.usage for v in verdicts] + exc.usage)
    except EvalspecError as exc:  # the judge's call failed for good
        return Comparison([], str(exc), [v.usage for v in verdicts])
    except (Exception, SystemExit) as exc:  # a bug costs the comparison, not the run
        return Comparison([], describe(exc), [v.usage for v in verdicts])
    usage = [v.usage for v in verdicts]
    if picks[0] != picks[1]:
        return Comparison([], f"position-inconsistent: the judge chose {candidates[picks[0]].label} with the "
                              f"candidates in order and {candidates[picks[1]].label} in reverse order", usage)
    best = picks[0]
    why = str(verdicts[0].answer.get("reason") or "")
    chosen = candidates[best]
    last = replies(chosen.transcript)[-1]
    evidence = Evidence(last.get("turn"), snippet(texts[best], 300), f"best: {chosen.label}")
    details = {"candidates": [c.label for c in candidates], "best": best, "verdicts": [v.recorded() for v in verdicts]}
    checks = [Check.of(True, say("chosen_best", n=n, why=why), [evidence], details=details) if i == best else
              Check.of(False, say("not_chosen", best=chosen.label, n=n, why=why), [evidence], details=details)
              for i in range(n)]
    return Comparison(checks, usage=usage)
