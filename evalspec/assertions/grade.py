"""Grade a transcript: deterministic checks first, judges only after the red lines held."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from evalspec.assertions.across import PENDING, across_records
from evalspec.assertions.anchors import examined
from evalspec.assertions.evaluate import AssertionResult, evaluate, no_verdict
from evalspec.assertions.offloop import evaluate_off_loop
from evalspec.config.model import AssertionSpec
from evalspec.core.errors import GradingError
from evalspec.extend.check import EmbedFn, GradingContext, JudgeFn, WorldView, resolve_turn
from evalspec.extend.patterns import REGEX_TIMEOUT_S
from evalspec.extend.registry import model_needed, resolve_type
from evalspec.extend.transcript import Message, replies


@dataclass(frozen=True)
class GradingInput:
    """What grading reads of a planned conversation (the planner builds it: `plan.grading_input`)."""

    test_id: str
    specs: list[AssertionSpec]  # turn-attached assertions in turn order, then the test's own
    labels: Mapping[str, int]
    vars: Mapping[str, Any]
    suite_dir: Path
    tools: Any = None  # the provider's declared tools, for tool-args-valid
    grade_timeout: float = REGEX_TIMEOUT_S  # options.grade_timeout
    absent: frozenset[str] = frozenset()  # labels by pattern that matched no user turn (recorded, docs/en/recorded-conversations.md)
    provider: str | None = None  # the id of the provider that answered (checks name it in their errors)
    # graded under watch (docs/en/reports-and-gate.md#errors-and-failures): the file that names the user-code
    # check in progress, and the checks (their `where`) that ended a process, each with its error, graded again
    note: Path | None = None
    ended: tuple[tuple[tuple[Any, ...], str], ...] = ()
    world: WorldView | None = None  # the world the conversation played on (docs/en/world.md)


def needs_model(spec: AssertionSpec) -> bool:
    return model_needed(spec) is not None


def received_only(given: GradingInput, transcript: list[Message]) -> GradingInput:
    """The assertions a conversation that ended in an error can still be graded on (docs/en/rule-self-tests.md#verdicts-that-hold: every reply
    that was received is graded): those of a turn that has its reply, `each_turn` (over the replies that
    came) and listed turns that all came. A test-level `last_response`, `any_turn` or `conversation` check
    waits for the whole conversation."""
    answered = {m.get("turn") for m in replies(transcript)}

    def came(ref: Any) -> bool:
        try:
            return resolve_turn(ref, given.labels) in answered
        except GradingError:
            return False

    def decidable(spec: AssertionSpec) -> bool:
        if spec.turn is not None:
            return spec.turn in answered
        if isinstance(spec.scope, dict):
            return all(came(ref) for ref in spec.scope.get("turns") or [])
        return spec.scope == "each_turn" and bool(answered)

    return replace(given, specs=[s for s in given.specs if decidable(s)])


# session rules whose failure on the replies received stays a failure whatever replies would have followed
_BROKEN_FOR_GOOD = frozenset({"not-before", "not-after", "at-most"})


def broken_for_good(spec: AssertionSpec) -> bool:
    """A rule that waits for the whole conversation but whose failure on a prefix of it is final (an error
    never hides a failure, docs/en/reports-and-gate.md#errors-and-failures): `not-before`, `not-after`,
    `at-most`, and a `not-` text check (a pattern found stays found). Their passes on a prefix decide
    nothing; `within`, positive checks and judges are left to the error."""
    if spec.type in _BROKEN_FOR_GOOD and not spec.negate:
        return True
    resolved = resolve_type(spec.name)
    return (spec.negate and resolved is not None and resolved[0].kind == "reply" and not needs_model(spec)
            and spec.type not in ("python", "javascript"))


async def grade(graded_input: GradingInput, transcript: list[Message], judge: JudgeFn | None = None,
                embed: EmbedFn | None = None,
                judge_for: Callable[[Any], JudgeFn | None] | None = None,
                grade_timeout: float | None = None) -> list[AssertionResult]:
    """Grade one transcript. `judge_for(spec.provider)` gives the judge of an assertion that names its own.
    Deterministic checks run off the event loop, each within `grade_timeout` (default: the suite's).
    A rule whose anchors are not in the conversation is skipped (`anchors.examined`); a `select-best` is
    and a `pairwise` with `against:` are
    left pending (their comparison decides them)."""
    specs, skipped = examined(graded_input.specs, transcript, graded_input.labels, graded_input.absent)
    compared = {i: no_verdict(s, PENDING) for i, s in enumerate(specs) if across_records(s) and i not in skipped}
    skipped = {**skipped, **compared}  # decided across the test's records (`play.compare`), not here
    ended = dict(graded_input.ended)  # the checks that ended a process: each an error, never run again
    skipped.update({i: no_verdict(s, ended[tuple(s.where)]) for i, s in enumerate(specs)
                    if tuple(s.where) in ended and i not in skipped})
    given = replace(graded_input, specs=[s for i, s in enumerate(specs) if i not in skipped])
    graded = iter(await _grade(given, transcript, judge, embed, judge_for, grade_timeout))
    out = [skipped[i] if i in skipped else next(graded) for i in range(len(specs))]
    for spec, result in zip(specs, out, strict=True):
        result.from_defaults = spec.where[:1] == ("defaults",)
    return out


async def _grade(graded_input: GradingInput, transcript: list[Message], judge: JudgeFn | None,
                 embed: EmbedFn | None, judge_for: Callable[[Any], JudgeFn | None] | None,
                 grade_timeout: float | None) -> list[AssertionResult]:
    given = graded_input
    ctx = GradingContext(transcript=transcript, labels=given.labels, vars=given.vars, test_id=given.test_id,
                         turn=None, suite_dir=given.suite_dir, judge=judge, embed=embed, tools=given.tools,
                         provider=given.provider, world=given.world)
    specs = given.specs
    results: dict[int, AssertionResult] = {}
    deterministic: list[tuple[int, AssertionSpec]] = []
    graded: list[tuple[int, AssertionSpec]] = []
    for i, spec in enumerate(specs):
        (graded if needs_model(spec) else deterministic).append((i, spec))
    limit = float(grade_timeout if grade_timeout is not None else given.grade_timeout)
    if not graded:  # no judge, no embedder: the checks' results are the answer, in order
        return _described(await evaluate_off_loop(list(specs), ctx, limit, given.note), specs) if specs else []
    if deterministic:
        checked = await evaluate_off_loop([s for _, s in deterministic], ctx, limit, given.note)
        results.update({i: r for (i, _), r in zip(deterministic, checked)})
    red_line = next((r for r in results.values() if r.passed is False and r.severity == "critical"), None)
    if graded and red_line is not None:
        for i, spec in graded:
            results[i] = AssertionResult(spec.name, spec.scope, None, None,
                                         reason=f"not judged: critical '{red_line.type}' failed first",
                                         weight=spec.weight, severity=spec.severity, metric=spec.metric,
                                         threshold=spec.threshold, turn=spec.turn)
    elif graded:
        def context_for(spec: AssertionSpec) -> GradingContext:
            if spec.provider is not None and judge_for is not None:
                return replace(ctx, judge=judge_for(spec.provider))
            return ctx

        # the judged checks' modules, loaded when a check is judged (docs/en/scale-and-ray.md#start-up)
        from evalspec.assertions.batch import judge_batch, plan_batches

        batches, alone = plan_batches(graded, lambda spec: context_for(spec).judge)  # `judge: {batch: true}`
        judged, together = await asyncio.gather(
            asyncio.gather(*(evaluate(spec, context_for(spec)) for _, spec in alone)),
            asyncio.gather(*(judge_batch(group, ctx, judge) for judge, group in batches)))
        results.update({i: r for (i, _), r in zip(alone, judged, strict=False)})
        for (_, group), rs in zip(batches, together, strict=True):
            results.update({i: r for (i, _), r in zip(group, rs, strict=True)})
    return _described([results[i] for i in range(len(specs))], specs)


def _described(results: list[AssertionResult], specs: Sequence[AssertionSpec]) -> list[AssertionResult]:
    """Each result carries its rule's `description:` (docs/en/reports-and-gate.md#language: shown under a failed rule in every report)
    and its `max_rate:` (the gate reads it: docs/en/statistics.md#red-lines-as-bounds)."""
    for result, spec in zip(results, specs, strict=False):
        if spec.description and not result.description:
            result.description = spec.description
        if spec.max_rate is not None:
            result.max_rate = spec.max_rate
    return results
