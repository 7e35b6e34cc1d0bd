"""`pairwise`: a judge compares this reply (or conversation) with another side, asked in both orders.

The other side is a `reference:` text (decided here, on one transcript), or (`against:`) the same
instance's transcript in the `--baseline` run or the same test played against another provider of this
run: those are decided across records once every side has finished (`play.compare`), as `select-best` is.
The judge sees the two sides labelled `A` and `B` by position and answers `{"reason", "winner"}`; it is
asked twice with the sides swapped. Agreeing answers give a win, a loss or a tie; disagreeing ones a
`tie (position-inconsistent)`, counted apart (docs/en/judges.md#comparing-two-bot-versions-pairwise).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Annotated, Literal

from evalspec.assertions.across import PENDING
from evalspec.assertions.select_best import Candidate, shown
from evalspec.config.model import PAIRWISE, AssertionSpec
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
from evalspec.extend.transcript import replies
from evalspec.providers.structured import verdict_schema

DEFAULT_CRITERION = "which reply serves the user better"
BASELINE = "baseline"
Winner = Literal["A", "B", "tie"]
Outcome = Literal["win", "loss", "tie", "inconsistent"]
OUTCOMES: tuple[Outcome, ...] = ("win", "tie", "inconsistent", "loss")
WINNER_SCHEMA = verdict_schema("winner", {"type": "string", "enum": ["A", "B", "tie"]})
_TAG = re.compile(r"<(/?side)", re.IGNORECASE)
_SCORE: dict[Outcome, float] = {"win": 1.0, "tie": 0.5, "inconsistent": 0.5, "loss": 0.0}


@dataclass(frozen=True, kw_only=True)
class PairwiseParams:
    against: Annotated[str | None, Keywords(minLength=1, description=(
        "baseline (the same instance in --baseline RUN.json) or a provider id of this suite"))] = None
    reference: Annotated[str | None, Keywords(minLength=1, description="a reference reply to compare with")] = None
    criterion: Annotated[str, Keywords(minLength=1, description="what the judge compares the two sides on")] = \
        DEFAULT_CRITERION
    pass_if: Annotated[Literal["not_worse", "better"], Keywords(description=(
        "not_worse: a win or a tie of either kind passes; better: only a win"))] = "not_worse"


@assertion(PAIRWISE, params=PairwiseParams, needs="judge", example=(
    "- pairwise: {against: baseline, pass_if: not_worse}   # judged twice, A/B swapped, against --baseline\n"
    "- pairwise: {reference: 您好，首付最低两成，月供按贷款年限计算。, criterion: 哪个回答更清楚地说明了首付}"))
async def pairwise(reply: Reply, spec: AssertionSpec, ctx: GradingContext) -> Check:
    """A judge compares the reply (or conversation) with a reference, the baseline run's or another provider's, asked in both orders."""
    params: PairwiseParams = spec.params
    if params.reference is None:
        raise GradingError(PENDING)  # decided across records (`play.compare`)
    if ctx.judge is None:
        raise GradingError("'pairwise' needs a judge: set `judge:` in the suite")
    ours = Candidate("this reply", list(ctx.transcript))
    pair = await ask_pair(spec, shown(spec, ours), _fenced(params.reference), ctx.judge)
    return pair.check(spec, ours)


def _fenced(text: str) -> str:
    return _TAG.sub(r"&lt;\1", text)  # a side can neither close its block nor open another


def question(criterion: str, scope: str, first: str, second: str) -> str:
    """The judge's question: two sides labelled A and B by position."""
    what = "conversations" if scope == "conversation" else "final replies"
    return (f"Criterion: {criterion}\n\nHere are two {what} given in the same test, labelled by position.\n\n"
            f'<side label="A">\n{_fenced(first)}\n</side>\n\n<side label="B">\n{_fenced(second)}\n</side>\n\n'
            "Which side better meets the criterion? Judge the content, not the order or the length. Answer with a "
            'JSON object with two keys: "reason" (one or two sentences of your own) and "winner" ("A", "B" or '
            '"tie").')


def winner(answer: object) -> Winner:
    """The judge's `winner`: A, B or tie (case and blanks forgiven); anything else is a GradingError."""
    value = answer.get("winner") if isinstance(answer, dict) else None
    text = value.strip().upper() if isinstance(value, str) else None
    if text == "A" or text == "B":
        return text  # type: ignore[return-value]
    if text == "TIE":
        return "tie"
    raise GradingError(f"judge answer has no 'winner' of A, B or tie: {answer!r}")


def outcome(first: Winner, second: Winner) -> Outcome:
    """Our side is A in the first order and B in the second: agreeing answers give win / loss / tie,
    disagreeing ones a position-inconsistent tie."""
    ours = {"A": "win", "B": "loss", "tie": "tie"}[first]
    swapped = {"A": "loss", "B": "win", "tie": "tie"}[second]
    return ours if ours == swapped else "inconsistent"  # type: ignore[return-value]


def passes(result: Outcome, pass_if: str) -> bool:
    """A win passes; a tie of either kind passes `not_worse` and fails `better`; a loss fails."""
    return result == "win" or (pass_if == "not_worse" and result in ("tie", "inconsistent"))


@dataclass
class Pair:
    """Both orders' answers: `winners` (ours A first, then ours B), the verdicts as recorded."""

    winners: tuple[Winner, Winner]
    verdicts: list[JudgeVerdict]
    ours: str

    @property
    def outcome(self) -> Outcome:
        return outcome(*self.winners)

    def check(self, spec: AssertionSpec, ours: Candidate) -> Check:
        result = self.outcome
        side = spec.params.against or "reference"
        why = " / ".join(str(v.answer.get("reason") or "") for v in self.verdicts)
        reply = replies(ours.transcript)
        evidence = Evidence(reply[-1].get("turn") if reply else None, snippet(self.ours, 300),
                            f"{result} against {side}")
        details = {"pairwise": {"outcome": result, "against": side, "winners": list(self.winners),
                                "pass_if": spec.params.pass_if},
                   "verdicts": [v.recorded() for v in self.verdicts]}
        return Check.of(passes(result, spec.params.pass_if), say(f"pairwise_{result}", side=side, why=why),
                        [evidence], score=_SCORE[result], details=details)


async def ask_pair(spec: AssertionSpec, ours: str, theirs: str, judge: JudgeFn) -> Pair:
    """The judge asked twice, ours as A then as B; an unusable answer raises a GradingError."""
    from evalspec.assertions.graded import JUDGE_SYSTEM  # the judged checks: loaded when one is judged

    verdicts: list[JudgeVerdict] = []
    try:
        for first, second in ((ours, theirs), (theirs, ours)):
            request = JudgeRequest([{"role": "system", "content": JUDGE_SYSTEM},
                                    {"role": "user", "content": question(spec.params.criterion, spec.scope, first,
                                                                         second)}],
                                   schema=WINNER_SCHEMA, name="pairwise_winner")
            verdicts.append(await judge(request))
        return Pair((winner(verdicts[0].answer), winner(verdicts[1].answer)), verdicts, ours)
    except GradingError as exc:  # the calls made are counted with the error
        raise GradingError(str(exc), usage=[v.usage for v in verdicts] + list(exc.usage)) from None


@dataclass
class PairResult:
    """`compare_sides`' answer: the check, or the error that kept the judge from deciding; `usage` lists the
    judge calls'."""

    check: Check | None
    error: str | None
    usage: list[dict[str, object]]


async def compare_sides(spec: AssertionSpec, ours: Candidate, theirs: Candidate | None,
                        judge: JudgeFn | None) -> PairResult:
    """`ours` against `theirs` (the baseline's or another provider's record of the same instance). Any
    failure to decide is an error, never a pass or a fail."""
    if theirs is None:
        where = "the baseline run" if spec.params.against == BASELINE else f"provider '{spec.params.against}'"
        return PairResult(None, f"not compared: {where} has no record of this instance", [])
    for side in (ours, theirs):
        if side.error is not None or not replies(side.transcript):
            return PairResult(None, f"not compared: {side.label} " +
                              (f"ended in an error ({side.error})" if side.error is not None else "has no reply"), [])
    if judge is None:
        return PairResult(None, "'pairwise' needs a judge: set `judge:` in the suite", [])
    try:
        pair = await ask_pair(spec, shown(spec, ours), shown(spec, theirs), judge)
    except GradingError as exc:
        return PairResult(None, str(exc), list(exc.usage))
    except EvalspecError as exc:  # the judge's call failed for good
        return PairResult(None, str(exc), [])
    except (Exception, SystemExit) as exc:  # a bug costs the comparison, not the run
        return PairResult(None, describe(exc), [])
    return PairResult(pair.check(spec, ours), None, [v.usage for v in pair.verdicts])
