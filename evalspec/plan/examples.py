"""Rule self-tests, graded (docs/en/rule-self-tests.md): every `examples:` entry of a deterministic assertion run through
the real checks before any call. The examples' shape is checked by `config.rule_examples`; grading them
needs the planned instances and the grading code, so it lives in the plan layer."""

from __future__ import annotations

import asyncio
from collections import Counter
from dataclasses import replace
from typing import Any

from evalspec.assertions.offloop import evaluate_off_loop
from evalspec.config.model import AssertionSpec, Suite
from evalspec.config.paths import PathKey
from evalspec.config.rule_examples import builtin_examples_of, example_transcript, examples_of, shown
from evalspec.core.errors import LoadError, Problem
from evalspec.core.pyref import load_callable, step
from evalspec.extend.check import GradingContext
from evalspec.extend.registry import model_needed


def as_tried(spec: AssertionSpec, example: Any) -> AssertionSpec:
    """The spec as it grades `example`: a lone reply (or `{reply, state, parts}`) is the reply of the rule's
    turn or turns."""
    if isinstance(example, list):
        return spec
    scope = spec.scope
    if scope == "turn" or isinstance(scope, dict):
        scope = "last_response"
    return replace(spec, scope=scope, turn=None)


def offline_checks(suites: list[Suite], instances: Any) -> list[Problem]:
    """Grade the examples of every deterministic assertion of the planned `instances` (every matrix
    instance: a templated rule is one rule per rendering), each assertion once per rendered value."""
    from evalspec.plan.build import instance_assertions

    jobs: list[tuple[Suite, AssertionSpec, str, int, Any, PathKey, GradingContext, str, str]] = []
    seen: set[tuple[str, PathKey, str]] = set()
    for inst in instances:
        for spec in instance_assertions(inst):
            examples = [(*e, "") for e in examples_of(spec)] + list(builtin_examples_of(spec))
            if not examples or model_needed(spec) is not None:
                continue
            key = (str(inst.suite.path), spec.where, repr((spec.value, spec.scope, spec.turn)))
            if key in seen:
                continue
            seen.add(key)
            if spec.type == "python" and isinstance(spec.value, str):
                lines = inst.suite.lines
                try:
                    with step(str(lines.problem(spec.value_where, "python check")) if lines else "python check"):
                        load_callable(spec.value, inst.suite.path.parent)
                except LoadError:
                    continue  # the preflight names it
            if spec.type == "javascript":
                from evalspec.core.node import node_binary  # (docs/en/scale-and-ray.md#start-up)

                if node_binary() is None:
                    continue  # the preflight names it
            for kind, n, example, where, whose in examples:
                transcript, labels = example_transcript(example)
                ctx = GradingContext(transcript=transcript, labels=labels, vars=inst.vars, test_id=inst.test_id,
                                     turn=None, suite_dir=inst.suite.path.parent,
                                     tools=inst.provider.config.get("tools"))
                jobs.append((inst.suite, as_tried(spec, example), kind, n, example, where, ctx, inst.base_id, whose))
    if not jobs:
        return []
    renderings = Counter((path, where) for path, where, _ in seen)

    async def grade_one(suite: Suite, spec: AssertionSpec, kind: str, n: int, where: PathKey,
                        ctx: GradingContext) -> Any:
        if spec.type != "python":
            return await evaluate_off_loop([spec], ctx, float(suite.option("grade_timeout")))
        # user code run before any call: what ends the process here is named by its example (docs/en/rule-self-tests.md#verdicts-that-hold)
        what = f"python check {spec.value!r} on {kind} example {n}"
        async with lock:
            with step(str(suite.lines.problem(where, what)) if suite.lines else what):
                return await evaluate_off_loop([spec], ctx, float(suite.option("grade_timeout")))

    async def grade_all() -> list[Any]:
        return await asyncio.gather(*(grade_one(suite, spec, kind, n, where, ctx)
                                      for suite, spec, kind, n, _, where, ctx, _, _ in jobs))

    lock = asyncio.Lock()  # python checks one at a time, so a step names the one that runs

    problems = []
    for (suite, _spec, kind, n, example, where, _ctx, rendered, whose), (result,) in zip(
            jobs, asyncio.run(grade_all()), strict=True):
        if result.error:
            message = f"{whose}{kind} example {n}: the rule could not be checked on {shown(example)}: {result.error}"
        elif kind == "fail" and result.passed:
            message = f"{whose}fail example {n}: the rule passed {shown(example)} — it does not catch this"
        elif kind == "pass" and not result.passed:
            message = (f"{whose}pass example {n}: the rule failed {shown(example)} ({result.reason}) — it would "
                       f"reject a reply it must accept")
        else:
            continue
        if renderings[(str(suite.path), _spec.where)] > 1:  # a templated rule: say which rendering it was
            message += f" (as rendered for {rendered})"
        problems.append(suite.lines.problem(where, message) if suite.lines else Problem(str(suite.path), None, "", message))
    return problems
