"""Model-graded and embedding-based assertions.

The judge answers with a JSON verdict (`{"reason": ..., "pass": true|false}`, or `{"reason": ..., "level":
<name>}` for a graded rubric with `levels:`); scores are computed here from the verdicts (share of passing
samples, or the majority level's score), never read from prose.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Annotated, Any, ClassVar, Literal

from evalspec.assertions.coherence import CoherenceParams, coherence
from evalspec.assertions.jury import ask_jury, decide
from evalspec.assertions.outcome import error_text, failure_stands
from evalspec.assertions.rubrics import DEFAULT_LEVELS
from evalspec.config.model import AssertionSpec
from evalspec.core.errors import GradingError, ProviderError
from evalspec.extend.check import (
    Check,
    Evidence,
    GradingContext,
    JudgeFn,
    JudgeRequest,
    JudgeVerdict,
    Reply,
    Said,
    Undecided,
    say,
)
from evalspec.extend.params import Keywords, Option
from evalspec.extend.registry import assertion, threshold_of
from evalspec.extend.transcript import ChatMessage, Message, is_system_message
from evalspec.providers.judge import Jury
from evalspec.providers.tool_rounds import tool_lines

Levels = Annotated[dict[str, Annotated[float, Keywords(minimum=0, maximum=1)]], Keywords(
    minProperties=2, description="graded rubric: ordered level name -> score; the judge answers one level name")]
LEVEL_THRESHOLD = 0.5


@dataclass(frozen=True, kw_only=True)
class JuryOptions:  # `jury:` beside an assertion's own `judge:` list (docs/en/judges.md#juries)
    rule: Literal["majority", "mean", "all", "any"] = "majority"
    quorum: Annotated[int | None, Keywords(minimum=1)] = None


@dataclass(frozen=True, kw_only=True)
class JudgeParams:  # the options every judged check shares
    rubric: Annotated[str | None, Option()] = None
    samples: Annotated[int | None, Option(), Keywords(minimum=1, maximum=15)] = None
    levels: Annotated[Levels | None, Option()] = None
    reference: Annotated[str | None, Option(), Keywords(
        description="a reference answer shown to the judge (e.g. a golden reply)")] = None
    judge: Annotated[list[str | dict[str, Any]] | None, Option(), Keywords(
        minItems=2, description="this check's own jury: a list of judge models (docs/en/judges.md#juries)")] = None
    jury: Annotated[JuryOptions | None, Option(), Keywords(
        description="how this check's jury decides: {rule: majority|mean|all|any, quorum: N}")] = None
    few_shot: Annotated[Literal["labels"] | None, Option(), Keywords(
        description="labels: up to 6 of this rule's human labels (.evalspec/labels.jsonl) shown to the judge as "
                    "worked examples")] = None

    def criterion_vars(self) -> dict[str, object]:
        """What a built-in criterion's `{...}` placeholders read."""
        return {}


@dataclass(frozen=True, kw_only=True)
class RubricParams(JudgeParams):  # llm-rubric: the value is the rubric
    value_field: ClassVar[str] = "criterion"
    criterion: Annotated[str, Keywords(minLength=1)]


@dataclass(frozen=True, kw_only=True)
class GoalParams(JudgeParams):  # trajectory:goal-success
    value_field: ClassVar[str] = "value"
    value: Annotated[str, Keywords(minLength=1)]

    def criterion_vars(self) -> dict[str, object]:
        return {"value": self.value}


@dataclass(frozen=True, kw_only=True)
class ConversationJudgeParams(JudgeParams):  # a judged conversation check that takes no value
    value_field: ClassVar[str] = "value"
    value: None | bool | str = None


PER_TURN_DOC = "judge each assistant turn on its own (score: the share of good turns; threshold default 1.0)"
WINDOW_DOC = "the last N turns the judge sees"


@dataclass(frozen=True, kw_only=True)
class RelevanceParams(ConversationJudgeParams):
    window: Annotated[int, Option(), Keywords(minimum=1, description=WINDOW_DOC)] = 5
    per_turn: Annotated[bool, Option(), Keywords(description=PER_TURN_DOC)] = True

    def criterion_vars(self) -> dict[str, object]:
        return {"window": self.window}


@dataclass(frozen=True, kw_only=True)
class RetentionParams(ConversationJudgeParams):
    window: Annotated[int, Option(), Keywords(minimum=1, description=WINDOW_DOC)] = 5
    per_turn: Annotated[bool, Option(), Keywords(description=PER_TURN_DOC)] = False


@dataclass(frozen=True, kw_only=True)
class RoleParams(JudgeParams):
    value_field: ClassVar[str] = "value"
    value: str | None = None
    role: Annotated[str | None, Option()] = None
    window: Annotated[int, Option(), Keywords(minimum=1, description=WINDOW_DOC)] = 5
    per_turn: Annotated[bool, Option(), Keywords(description=PER_TURN_DOC)] = False

    def criterion_vars(self) -> dict[str, object]:
        return {"role": self.role or self.value}


def _levels_option(name: str) -> Any:
    """`levels:` of a type with the seed's graded rubric: a rubric of one's own, or `default` for the seed's."""
    shown = ", ".join(f"{k} {v:g}" for k, v in DEFAULT_LEVELS[name].items())
    return Annotated[Literal["default"] | Levels | None, Option(), Keywords(description=f"graded rubric; `default`: {shown}")]


@dataclass(frozen=True, kw_only=True)
class CorrectionParams(ConversationJudgeParams):
    levels: _levels_option("follows-correction") = None  # type: ignore[valid-type]


@dataclass(frozen=True, kw_only=True)
class TopicParams(ConversationJudgeParams):
    levels: _levels_option("stays-on-topic") = None  # type: ignore[valid-type]

# docs/en/rate-limits.md: every judge request starts with the same system message and then the transcript, the criterion
# and the answer's format after it, so a provider's prompt cache serves a conversation's several checks
JUDGE_SYSTEM = (
    "You are a strict, impartial evaluator of conversations between a user and an AI assistant. "
    "Judge only against the criterion given. Answer with a single JSON object and nothing else, "
    "in the format given after the criterion."
)
# the keys are described, not shown as a JSON example: a small model copies an example's placeholders
PASS_FORMAT = ('Answer with a JSON object with two keys: "reason" (one or two sentences of your own, citing the '
               'turn) and "pass" (true or false).')
LEVEL_FORMAT = ('Answer with a JSON object with two keys: "reason" (one or two sentences of your own, citing the '
                'turn) and "level" (one level name, exactly as written).')


def format_transcript(transcript: list[Message]) -> str:
    lines = []
    for m in transcript:
        if m["role"] in ("user", "assistant") and (m["content"] or not m.get("tool_calls")):
            who = "User" if m["role"] == "user" else \
                "Assistant (scripted by the test, not the system's own words)" if m.get("injected") else "Assistant"
            lines.append(f"[turn {m.get('turn')}] {who}: {m['content']}")
        lines.extend(tool_lines(m))  # the judge sees the agent's tool calls and their results
    return "\n".join(lines)


def judging(spec: AssertionSpec) -> JudgeParams:
    """A judged check's options (a plugin check that calls the judge helpers gets the defaults)."""
    params = spec.params
    return params if isinstance(params, JudgeParams) else JudgeParams()


def with_reference(spec: AssertionSpec, prompt: str) -> str:
    """The judge sees an assertion's `reference:` answer, when it has one, and with `few_shot: labels` the
    rule's human labels as worked examples."""
    reference = judging(spec).reference
    prompt = f"{prompt}\n\nReference answer (for comparison, not to be copied):\n{reference}" if reference else prompt
    if judging(spec).few_shot == "labels":  # docs/en/judges.md#labels-flow-back
        from evalspec.assertions.labels import few_shot_text, labels_for

        if labels := labels_for(spec):
            prompt = f"{prompt}\n\n{few_shot_text(labels)}"  # after the transcript: its prompt-cache prefix stays
    return prompt


def levels_of(spec: AssertionSpec) -> dict[str, float] | None:
    """The assertion's graded levels (`levels: default` -> the seed's levels for its type), or None."""
    levels = judging(spec).levels
    if isinstance(levels, str):  # `default` (the types with the seed's levels declare it)
        return DEFAULT_LEVELS[spec.type]
    return {str(k): float(v) for k, v in levels.items()} if isinstance(levels, dict) else None


@contextmanager
def _counted(verdicts: list[JudgeVerdict]) -> Iterator[None]:
    """A check that ends in an error still reports every judge call it made (`GradingError.usage`): the
    earlier samples' and the unusable answer's; a judge call that failed for good leaves the earlier ones."""
    try:
        yield
    except GradingError as exc:
        exc.usage = [*(v.usage for v in verdicts), *exc.usage]
        raise
    except ProviderError as exc:
        if not verdicts:
            raise
        raise GradingError(str(exc), usage=[v.usage for v in verdicts]) from exc


async def _graded(spec: AssertionSpec, ctx: GradingContext, prompt: str, turn: int | None,
                  levels: dict[str, float], threshold: float | None) -> tuple[Check, list[JudgeVerdict]]:
    """A graded rubric: each sample answers one level; the majority level wins (a tie: the lower score)."""
    assert ctx.judge is not None
    from evalspec.providers.structured import verdict_schema

    names = list(levels)
    schema = verdict_schema("level", {"type": "string", "enum": names})
    listing = "\n".join(f"- {name}" for name in names)
    system = JUDGE_SYSTEM
    question = f"{prompt}\n\nChoose the one level that fits best, answering its name exactly as written:\n{listing}" \
               f"\n\n{LEVEL_FORMAT}"
    samples = judging(spec).samples or 1
    verdicts: list[JudgeVerdict] = []
    for i in range(samples):
        with _counted(verdicts):
            verdict = await ctx.judge(JudgeRequest([{"role": "system", "content": system},
                                                    {"role": "user", "content": question}],
                                                   schema=schema, name="graded_verdict", sample=i))
            verdicts.append(verdict)
            level = verdict.answer.get("level")
            if not isinstance(level, str) or level.strip() not in levels:
                raise GradingError(f"judge answered level {level!r}, which is not one of: {', '.join(names)}")
            verdict.answer["level"] = level.strip()
    answers = [v.answer for v in verdicts]
    counts = Counter(a["level"] for a in answers)
    top = max(counts.values())
    chosen = min((name for name, c in counts.items() if c == top), key=lambda name: levels[name])
    score = levels[chosen]
    threshold = threshold if threshold is not None else LEVEL_THRESHOLD
    why = str(next(a.get("reason", "") for a in answers if a["level"] == chosen))
    reason = say("level_chosen", level=chosen, score=f"{score:g}", why=why) if samples == 1 else \
        say("samples_chose", n=counts[chosen], samples=samples, level=chosen, score=f"{score:g}", why=why)
    return Check.of(score >= threshold, reason, [Evidence(turn, reason.en)], score=score,
                    details={"verdicts": [v.recorded() for v in verdicts], "level": chosen, "levels": levels}), verdicts


async def _verdict(spec: AssertionSpec, ctx: GradingContext, prompt: str, turn: int | None,
                   one_turn: bool = False) -> Check:
    """The judge's verdict on `prompt` (see `_verdicts`)."""
    return (await _verdicts(spec, ctx, prompt, turn, one_turn))[0]


async def _verdicts(spec: AssertionSpec, ctx: GradingContext, prompt: str, turn: int | None,
                    one_turn: bool = False) -> tuple[Check, list[JudgeVerdict]]:
    """The judge's verdict on `prompt`; `one_turn`: one turn of a per-turn check, passing at its samples'
    majority (or level 0.5), whatever the assertion's threshold (that is for the share of good turns)."""
    prompt = with_reference(spec, prompt)
    if ctx.judge is None:
        raise GradingError(f"'{spec.type}' needs a judge: set `judge:` in the suite")
    threshold = None if one_turn else spec.threshold
    levels = levels_of(spec)
    if isinstance(ctx.judge, Jury):  # every member asked; its own samples decide its vote (docs/en/judges.md#juries)
        jury = ctx.judge

        async def member(judge: JudgeFn) -> tuple[Check, list[JudgeVerdict]]:
            return await _one_judge(spec, replace(ctx, judge=judge), prompt, turn, levels,
                                    threshold if levels is not None else None)  # a member's own majority

        votes = await ask_jury(jury, member)
        check = decide(jury, votes, threshold, levels, turn)
        return check, [x for v in votes for x in v.verdicts or []]
    return await _one_judge(spec, ctx, prompt, turn, levels, threshold)


async def _one_judge(spec: AssertionSpec, ctx: GradingContext, prompt: str, turn: int | None,
                     levels: dict[str, float] | None, threshold: float | None) -> tuple[Check, list[JudgeVerdict]]:
    """One judge's verdict on `prompt` over its samples: their majority, or their majority level."""
    assert ctx.judge is not None
    if levels is not None:
        return await _graded(spec, ctx, prompt, turn, levels, threshold)
    samples = judging(spec).samples or 1
    verdicts: list[JudgeVerdict] = []
    for i in range(samples):
        messages: list[ChatMessage] = [{"role": "system", "content": JUDGE_SYSTEM},
                                       {"role": "user", "content": f"{prompt}\n\n{PASS_FORMAT}"}]
        with _counted(verdicts):
            verdict = await ctx.judge(JudgeRequest(messages, sample=i))
            verdicts.append(verdict)
            if not isinstance(verdict.answer.get("pass"), bool):
                raise GradingError(f"judge answer has no boolean 'pass': {verdict.answer!r}")
    answers = [v.answer for v in verdicts]
    passes = sum(1 for a in answers if a["pass"])
    score = passes / samples
    majority = passes * 2 > samples
    passed = score >= threshold if threshold is not None else majority
    reason = str(answers[0].get("reason", "")) if samples == 1 else \
        say("samples_passed", n=passes, samples=samples,
            why=str(next((a.get("reason", "") for a in answers if a["pass"] == majority), "")))
    return Check.of(passed, reason, [Evidence(turn, str(reason))], score=score,
                    details={"verdicts": [v.recorded() for v in verdicts]}), verdicts


async def judge_reply(spec: AssertionSpec, ctx: GradingContext, reply: Reply, criterion: str) -> Check:
    messages = ctx.transcript
    if not reply.whole_conversation and reply.turn is not None:  # each_turn / {turns}: stop at the turn under review
        messages = [m for m in messages if (m.get("turn") or 0) <= reply.turn]
    history = format_transcript(messages)
    if reply.whole_conversation:  # the transcript first (docs/en/rate-limits.md): the shared prefix of the conversation's checks
        prompt = f"Conversation:\n{history}\n\nCriterion: {criterion}\n\nDoes the assistant meet the criterion over the conversation?"
    else:
        prompt = (f"Conversation so far:\n{history}\n\nReply under evaluation (turn {reply.turn}):\n{reply.text}\n\n"
                  f"Criterion: {criterion}\n\nDoes this reply meet the criterion?")
    return await _verdict(spec, ctx, prompt, reply.turn)


async def judge_conversation(spec: AssertionSpec, ctx: GradingContext, criterion: str) -> Check:
    prompt = f"Conversation:\n{format_transcript(ctx.transcript)}\n\nCriterion: {judging(spec).rubric or criterion}\n\n" \
             "Does the assistant meet the criterion?"
    return await _verdict(spec, ctx, prompt, ctx.turn)


def assistant_turns(transcript: list[Message]) -> list[tuple[int, str]]:
    """(turn, reply) of every turn the system answered: its last assistant message with text; golden
    (scripted) assistant lines are the test's words, not the system's, and are not judged."""
    replies: dict[int, str] = {}
    for m in transcript:
        if is_system_message(m) and (turn := m.get("turn")) is not None and m.get("content"):
            replies[int(turn)] = str(m["content"])
    return sorted(replies.items())


async def judge_turns(spec: AssertionSpec, ctx: GradingContext, criterion: str, window: int) -> Check:
    """docs/en/real-models.md per-turn judgement: one judge call per assistant turn, showing the last `window` turns up to
    it; the score is the share of good turns, each bad turn is evidence (turn + reason); the assertion
    passes when the share reaches its threshold (default 1.0: every turn good)."""
    criterion = judging(spec).rubric or criterion
    turns = assistant_turns(ctx.transcript)
    if not turns:
        raise GradingError(f"'{spec.type}' judges each assistant turn, and the conversation has none")
    verdicts: list[JudgeVerdict] = []
    bad: list[Evidence] = []
    undecided: list[Undecided] = []
    failed_usage: list[dict[str, Any]] = []
    for turn, reply in turns:
        shown = [m for m in ctx.transcript if turn - window < (m.get("turn") or 0) <= turn
                 and not (m["role"] == "assistant" and m.get("turn") == turn)]
        prompt = (f"Criterion: {criterion}\n\nConversation so far (the last {window} turns):\n{format_transcript(shown)}"
                  f"\n\nReply under evaluation (turn {turn}):\n{reply}\n\nDoes this reply meet the criterion?")
        try:
            check, judged = await _verdicts(spec, ctx, prompt, turn, one_turn=True)
        except (GradingError, ProviderError) as exc:  # this turn is undecided; the others are still judged
            undecided.append(Undecided(turn, str(exc)))
            failed_usage += exc.usage if isinstance(exc, GradingError) else []
            continue
        verdicts.extend(judged)
        if not check.passed:
            bad.append(Evidence(turn, check.reason))
    threshold = spec.threshold if spec.threshold is not None else 1.0
    decided = len(turns) - len(undecided)
    good = decided - len(bad)
    if undecided and not failure_stands([(True, 1.0, 1.0)] * good + [(False, 0.0, 1.0)] * len(bad)
                                        + [(None, None, 1.0)] * len(undecided), threshold):
        raise GradingError(error_text(undecided), usage=[*(v.usage for v in verdicts), *failed_usage])
    score = good / decided
    reason = say("turns_good", good=good, n=decided, bad=say("empty") if not bad else Said(
        "; " + "; ".join(f"turn {e.turn}: {e.text}" for e in bad), "；" + "；".join(f"第 {e.turn} 轮：{e.text}" for e in bad)))
    check = Check.of(score >= threshold and not undecided, reason, bad, score=score,
                     details={"verdicts": [v.recorded() for v in verdicts], "turns": len(turns), "good": good,
                              **({"_undecided_usage": failed_usage} if failed_usage else {})})
    check.undecided = undecided
    return check


@assertion("llm-rubric", params=RubricParams, default_scope="conversation", needs="judge",
           example=("- llm-rubric: 助手语气自然，回答了分期问题\n"
                    "  threshold: 0.7"))
async def llm_rubric(reply: Reply, spec: AssertionSpec, ctx: GradingContext) -> Check:
    """A judge checks the reply (or the conversation) against a rubric."""
    p: RubricParams = spec.params
    return await judge_reply(spec, ctx, reply, p.rubric or p.criterion)


CRITERIA: dict[str, str] = {}  # each built-in judged conversation check's criterion (`batch` asks them together)


def _judged(name: str, criterion: str, params: type[JudgeParams] = ConversationJudgeParams,
            turn_criterion: str | None = None, *, example: str) -> None:
    CRITERIA[name] = criterion

    async def check(spec: AssertionSpec, ctx: GradingContext) -> Check:
        p = judging(spec)
        if turn_criterion is not None and getattr(p, "per_turn", False):
            return await judge_turns(spec, ctx, turn_criterion.format(**p.criterion_vars()), int(getattr(p, "window", 5)))
        return await judge_conversation(spec, ctx, criterion.format(**p.criterion_vars()))

    check.__doc__ = criterion.split(".")[0].format(value="<value>", role="<role>", window="N") + "."
    assertion(name, kind="conversation", params=params, needs="judge", example=example)(check)


_judged("trajectory:goal-success", "Over the whole conversation, the user's goal is achieved: {value}.", GoalParams,
        example="- trajectory:goal-success: 用户拿到了首付金额并约好了到店时间")
_judged("conversation-relevance", "Each assistant reply is relevant to the last {window} turns of the conversation.",
        RelevanceParams, "The reply is relevant to the conversation shown and answers the user's latest message.",
        example=("- conversation-relevance:\n"
                 "  window: 3"))
_judged("knowledge-retention", "The assistant retains facts the user gave earlier and never asks again for, "
        "or contradicts, information already provided.", RetentionParams,
        "The reply keeps the facts the user gave earlier: it neither asks again for nor contradicts information "
        "already provided.",
        example="- knowledge-retention:")
_judged("role-adherence", "The assistant stays in its assigned role throughout: {role}.", RoleParams,
        "The reply stays in the assistant's assigned role: {role}.",
        example="- role-adherence: 汽车销售顾问")
_judged("coherence", "The assistant never contradicts itself across turns.",
        example="- coherence:")
_judged("follows-correction", "After the user changes an instruction, goal, constraint or premise, the assistant "
        "follows the newest one, and points out when the new statement contradicts an earlier premise.",
        CorrectionParams,
        example=("- follows-correction:\n"
                 "  levels: default"))
_judged("stays-on-topic", "The assistant does not drift away from the user's first request.", TopicParams,
        example=("- stays-on-topic:\n"
                 "  levels: default"))
_judged("rejects-false-premise", "When the user states a false premise, the assistant points it out instead of accepting it.",
        example="- rejects-false-premise:")


def cosine(a: list[float], b: list[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=False))
    na, nb = math.sqrt(sum(x * x for x in a)), math.sqrt(sum(y * y for y in b))
    return dot / (na * nb) if na and nb else 0.0


@dataclass(frozen=True)
class SimilarParams:
    value_field: ClassVar[str] = "text"
    text: Annotated[str, Keywords(minLength=1)]


@assertion("similar", params=SimilarParams, default_threshold=0.8, needs="embedder",
           example=("- similar: 欢迎周六到店试驾\n"
                    "  threshold: 0.75"))
async def similar(reply: Reply, spec: AssertionSpec, ctx: GradingContext) -> Check:
    """Cosine similarity between the reply and the value (default threshold 0.8)."""
    if ctx.embed is None:
        raise GradingError("'similar' needs an embedder: set `embedder:` in the suite")
    a, b = await ctx.embed([reply.text, spec.params.text])
    sim = cosine(a, b)
    threshold = threshold_of(spec)
    return Check.of(sim >= threshold, say("similarity", value=f"{sim:.3f}", threshold=threshold),
                    [Evidence(reply.turn, f"{sim:.3f}")], score=max(0.0, sim), details={"similarity": sim})


@assertion("topic-coherence", kind="conversation", params=CoherenceParams, needs="embedder",
           example="- topic-coherence: {min_adjacent: 0.3, max_drift: 0.9}")
async def topic_coherence(spec: AssertionSpec, ctx: GradingContext) -> Check:
    """Adjacent messages stay similar, the last does not drift far from the first, no reply repeats the last."""
    return await coherence(spec, ctx, cosine)
