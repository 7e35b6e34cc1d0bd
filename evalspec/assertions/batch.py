"""`judge: {batch: true}` (docs/en/rate-limits.md): a conversation's judged checks that use the same judge and the
`conversation` scope go to it in one call, answered with one object holding one verdict per check (`a1`,
`a2`, … in suite order). Each verdict is read with the judge's usual honesty rules (the last complete answer
counts; format examples, reasoning, quoted drafts and disagreeing verdicts are not verdicts), and a missing
or unusable one is an error of that check alone; the results are shaped as if each check had been asked.

Batched: `llm-rubric` and the built-in judged conversation checks, one sample, not attached to a turn.
Anything else (a plugin check calling the judge, `samples: 3`, `each_turn`) is asked on its own.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, TypeGuard

from evalspec.assertions.evaluate import AssertionResult, _negate, combine, no_verdict
from evalspec.assertions.graded import (
    CRITERIA,
    JUDGE_SYSTEM,
    LEVEL_THRESHOLD,
    format_transcript,
    judging,
    levels_of,
    with_reference,
)
from evalspec.config.model import AssertionSpec
from evalspec.core.errors import EvalspecError, GradingError
from evalspec.core.usercode import describe
from evalspec.extend.check import Check, Evidence, GradingContext, JudgeFn, JudgeRequest, say
from evalspec.extend.registry import model_needed
from evalspec.extend.transcript import ChatMessage, Message
from evalspec.providers.answers import (
    Shown,
    answer_text,
    decision,
    is_format_example,
    json_objects,
    quoted_by_position,
)
from evalspec.providers.judge import BATCHING
from evalspec.providers.structured import verdict_schema

Group = list[tuple[int, AssertionSpec]]
PASS_ANSWER = 'an object with "reason" (one or two sentences of your own, citing the turn) and "pass" (true or false)'
LEVEL_ANSWER = ('an object with "reason" (one or two sentences of your own, citing the turn) and "level" (one level '
                'name, exactly as written)')


def batchable(spec: AssertionSpec) -> bool:
    if spec.turn is not None or spec.scope != "conversation" or model_needed(spec) != "judge":
        return False
    if (judging(spec).samples or 1) != 1:
        return False
    return spec.type == "llm-rubric" or spec.type in CRITERIA


def plan_batches(graded: Group, judge_of: Callable[[AssertionSpec], JudgeFn | None]
                 ) -> tuple[list[tuple[JudgeFn, Group]], Group]:
    """The batches (a batching judge and two or more of its checks, in suite order) and the checks asked alone."""
    groups: dict[int, tuple[JudgeFn, Group]] = {}
    alone: Group = []
    for i, spec in graded:
        judge = judge_of(spec)
        if judge is not None and judge in BATCHING and batchable(spec):
            groups.setdefault(id(judge), (judge, []))[1].append((i, spec))
        else:
            alone.append((i, spec))
    batches = [(judge, group) for judge, group in groups.values() if len(group) > 1]
    alone += [entry for _, group in groups.values() if len(group) == 1 for entry in group]
    return batches, sorted(alone, key=lambda entry: entry[0])


def criterion(spec: AssertionSpec) -> str:
    params = judging(spec)
    if spec.type == "llm-rubric":
        text = params.rubric or spec.params.criterion
    else:
        text = params.rubric or CRITERIA[spec.type].format(**params.criterion_vars())
    return with_reference(spec, text)


def batch_prompt(specs: list[AssertionSpec], transcript: list[Message]) -> tuple[str, dict[str, Any]]:
    """The question (the transcript first, docs/en/rate-limits.md) and the answer's JSON Schema."""
    parts = [f"Conversation:\n{format_transcript(transcript)}\n\n"
             f"Judge the assistant against each of the {len(specs)} criteria below, each on its own."]
    properties: dict[str, object] = {}
    for n, spec in enumerate(specs, 1):
        name = f"a{n}"
        levels = levels_of(spec)
        if levels is None:
            parts.append(f"{name}. Criterion: {criterion(spec)}\nDoes the assistant meet the criterion? "
                         f"Answer {name} with: {PASS_ANSWER}")
            properties[name] = verdict_schema("pass", {"type": "boolean"})
        else:
            listing = "\n".join(f"- {level}" for level in levels)
            parts.append(f"{name}. Criterion: {criterion(spec)}\nChoose the one level that fits best, answering "
                         f"its name exactly as written:\n{listing}\nAnswer {name} with: {LEVEL_ANSWER}")
            properties[name] = verdict_schema("level", {"type": "string", "enum": list(levels)})
    names = list(properties)
    parts.append(f"Answer with one JSON object holding one property per criterion ({', '.join(names)}), "
                 "each that criterion's answer.")
    schema = {"type": "object", "properties": properties, "required": names, "additionalProperties": False}
    return "\n\n".join(parts), schema


def parse_batch(text: str, names: list[str], keys: dict[str, list[str]], *,
                shown_to_judge: Shown) -> dict[str, dict[str, object] | str]:
    """Each name's verdict object, or the error that stands for it (docs/en/rule-self-tests.md#verdicts-that-hold honesty, per verdict): an
    object quoted from the conversation the judge was shown is never a verdict (`answers.Shown`)."""
    answer = answer_text(text)
    shown = text.strip()[:200]

    def usable(value: object) -> TypeGuard[dict[str, object]]:
        return isinstance(value, dict) and not is_format_example(value) and not shown_to_judge.quotes(value)

    found = [(s, v) for s, _, v in json_objects(answer) if any(n in v for n in names) and not shown_to_judge.quotes(v)]
    answers = [(s, v) for s, v in found if any(usable(v.get(n)) for n in names)]
    if not answers:
        what = "only a format example (placeholder values), no answer" if found else \
            f"not a JSON answer (no object with {', '.join(names)})"
        return {n: f"judge answer is {what}: a refusal: {shown!r}" for n in names}
    out: dict[str, dict[str, object] | str] = {}
    for n in names:  # each verdict on its own: the last usable one counts, an earlier one may not disagree
        mine = [(s, x) for s, v in answers if usable(x := v.get(n))]
        if not mine:
            shaped = any(isinstance(v.get(n), dict) for _, v in found)
            out[n] = f"the judge's verdict '{n}' is a format example (placeholder values), no answer: {shown!r}" \
                if shaped else f"the judge's batch answer has no verdict '{n}' for this check: {shown!r}"
            continue
        value = mine[-1][1]
        decided = decision(value, keys[n])
        other = next((v for s, v in mine[:-1] if not quoted_by_position(answer, s)
                      and decision(v, keys[n]) != decided), None)
        if other is not None:
            out[n] = (f"the judge's answer holds two verdicts '{n}' that disagree "
                      f"({json.dumps(decision(other, keys[n]), ensure_ascii=False)} then "
                      f"{json.dumps(decided, ensure_ascii=False)}): {shown!r}")
            continue
        out[n] = dict(value)
    return out


def _check(spec: AssertionSpec, verdict: dict[str, object], turn: int | None) -> Check:
    """The check the verdict makes, as the one-by-one path makes it (`graded._verdict` / `_graded`, one sample)."""
    levels = levels_of(spec)
    shown = repr(verdict)
    if levels is None:
        said = verdict.get("pass")
        if not isinstance(said, bool):
            raise GradingError(f"judge answer has no boolean 'pass': {shown}")
        score = 1.0 if said else 0.0
        passed = score >= spec.threshold if spec.threshold is not None else said
        reason = str(verdict.get("reason", ""))
        return Check(passed, score, reason, [Evidence(turn, reason)], {"verdicts": [verdict]})
    level = verdict.get("level")
    if not isinstance(level, str) or level.strip() not in levels:
        raise GradingError(f"judge answered level {level!r}, which is not one of: {', '.join(levels)}")
    chosen = verdict["level"] = level.strip()
    score = levels[chosen]
    threshold = spec.threshold if spec.threshold is not None else LEVEL_THRESHOLD
    said = say("level_chosen", level=chosen, score=f"{score:g}", why=verdict.get("reason", ""))
    return Check.of(score >= threshold, said, [Evidence(turn, said.en)], score=score,
                    details={"verdicts": [verdict], "level": chosen, "levels": levels})


async def judge_batch(group: Group, ctx: GradingContext, judge: JudgeFn) -> list[AssertionResult]:
    """One judge call for `group`'s checks; their results in the group's order."""
    specs = [spec for _, spec in group]
    names = [f"a{n}" for n in range(1, len(specs) + 1)]
    prompt, schema = batch_prompt(specs, ctx.transcript)
    messages: list[ChatMessage] = [{"role": "system", "content": JUDGE_SYSTEM}, {"role": "user", "content": prompt}]
    try:
        answer = await judge(JudgeRequest(messages, schema=schema, name="batch_verdicts", answers=len(specs),
                                          parse=False))
    except EvalspecError as exc:
        return [no_verdict(spec, str(exc) or type(exc).__name__) for spec in specs]
    except (Exception, SystemExit) as exc:
        return [no_verdict(spec, describe(exc)) for spec in specs]
    usage = answer.usage
    keys = {n: list(schema["properties"][n]["required"]) for n in names}
    parsed = parse_batch(answer.text, names, keys, shown_to_judge=Shown(messages))
    results: list[AssertionResult] = []
    for spec, name in zip(specs, names, strict=True):
        verdict = parsed[name]
        try:
            if isinstance(verdict, str):
                raise GradingError(verdict)
            check = _check(spec, verdict, ctx.turn)
        except GradingError as exc:
            results.append(no_verdict(spec, str(exc)))
            continue
        check.details["batch"] = name
        results.append(combine(spec, [_negate(check) if spec.negate else check]))
    if results:  # one call, counted once (on the first check), whether or not its verdicts were usable
        results[0].judge_usage = [usage]
    return results
