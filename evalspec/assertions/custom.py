"""`python: file.py:function` — a user's own check."""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Annotated, Any, ClassVar

from evalspec.config.model import AssertionSpec
from evalspec.core.errors import GradingError
from evalspec.core.pyref import load_callable
from evalspec.extend.check import Check, Evidence, GradingContext, Reply, say
from evalspec.extend.params import Keywords
from evalspec.extend.registry import assertion, threshold_of


@dataclass(frozen=True)
class PythonParams:
    value_field: ClassVar[str] = "function"
    function: Annotated[str, Keywords(pattern=r"^.+:[A-Za-z_][A-Za-z0-9_]*$")]  # FILE.py:NAME or module:NAME


@assertion("python", params=PythonParams, default_threshold=0.5,
           example=("- python: checks.py:polite     # fn(output, context), relative to the suite\n"
                    "  threshold: 0.8"))
async def python_check(reply: Reply, spec: AssertionSpec, ctx: GradingContext) -> Check:
    """fn(output, context) returns bool, float, or {pass, score, reason}."""
    name = spec.params.function
    fn = load_callable(name, ctx.suite_dir)
    context = {"transcript": [dict(m) for m in ctx.transcript], "turn": reply.turn, "vars": dict(ctx.vars), "test_id": ctx.test_id,
               "labels": dict(ctx.labels)}
    result: Any = fn(reply.text, context)
    if inspect.isawaitable(result):
        result = await result
    threshold = threshold_of(spec)
    evidence = [Evidence(reply.turn, reply.text[:160])]
    if isinstance(result, bool):
        return Check.of(result, say("returned", name=name, value=result), evidence)
    if isinstance(result, (int, float)):
        return Check.of(float(result) >= threshold, say("returned", name=name, value=result), evidence, score=float(result))
    if isinstance(result, dict) and ("pass" in result or "score" in result):
        verdict = result.get("pass")
        if type(verdict) is int and verdict in (0, 1):
            verdict = bool(verdict)
        if "pass" in result and not isinstance(verdict, bool):
            raise GradingError(f"{name} returned pass={verdict!r}; expected true or false")
        score = float(result.get("score", 1.0 if verdict else 0.0))
        passed = verdict if isinstance(verdict, bool) else score >= threshold
        return Check(passed, score, str(result.get("reason", "")), evidence)
    raise GradingError(f"{name} returned {type(result).__name__}; expected bool, float or {{pass, score, reason}}")
