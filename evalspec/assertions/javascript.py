"""`javascript: CODE` or `javascript: file://FILE.js[:function]` — a check written in JavaScript, run by
Node.js with promptfoo's rules (`evalspec/core/node.py` owns the node processes).

The code sees `output` (the reply's text; a reply that made tool calls is the calls in OpenAI's format,
or `{role, content, tool_calls}` when it also has text) and `context` (`vars`, `prompt`, `test`, the
assertion's `config`, and what python checks get: `transcript`, `turn`, `test_id`, `labels`). One line
is an expression; several lines are a function body that must `return`. It returns a boolean, a number
(a score: passes when above 0, or at least the `threshold` when one is given) or `{pass, score, reason}`
(all three, as promptfoo requires).
A check that cannot run (no node, a syntax error, a missing file or function, a time-out, an exception,
a return value that is no verdict) is an `error`, never a pass or a fail (docs/en/reports-and-gate.md#errors-and-failures).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, ClassVar

from evalspec.config.model import AssertionSpec
from evalspec.core.errors import GradingError
from evalspec.core.node import POOL
from evalspec.extend.check import Check, Evidence, GradingContext, Reply, say
from evalspec.extend.params import Keywords, Option
from evalspec.extend.patterns import grade_time_limit
from evalspec.extend.registry import assertion
from evalspec.extend.transcript import ToolCall

FILE = "file://"


@dataclass(frozen=True)
class JavascriptParams:
    value_field: ClassVar[str] = "code"
    code: Annotated[str, Keywords(minLength=1, description=(
        "JavaScript run by Node.js: one line is an expression, several lines a function body that returns; "
        "or file://FILE.js[:function] (relative to the suite), called as fn(output, context)"))]
    config: Annotated[dict[str, Any] | None, Option(), Keywords(
        description="any values, handed to the code as context.config")] = None


def file_ref(code: str) -> tuple[str, str] | None:
    """`file://FILE.js[:function]` -> (FILE.js, function or ""); None for inline code."""
    if not code.startswith(FILE):
        return None
    path, _, function = code[len(FILE):].partition(":")
    return path, function


def node_request(code: str, suite_dir: Path) -> dict[str, Any]:
    """What the node worker is asked to run (or check): inline code, or a file's function."""
    ref = file_ref(code)
    if ref is None:
        return {"code": code}
    path = (suite_dir / ref[0]).resolve()
    if not path.is_file():
        raise GradingError(f"{ref[0]} does not exist (looked for {path})")
    return {"file": str(path), "fn": ref[1]}


def check_problem(code: str, suite_dir: Path, limit: float) -> str | None:
    """Why `code` cannot run, found without running it (a file's module is loaded, as python checks'
    are imported): node missing, a syntax error, a missing file or function. None when it can."""
    try:
        answer = POOL.call({"op": "check", **node_request(code, suite_dir)}, limit)
    except GradingError as exc:
        return str(exc)
    if answer.get("ok"):
        return None
    message = str(answer.get("message"))
    if answer.get("kind") == "syntax" and file_ref(code) is None and "\n" not in code.strip() \
            and code.strip().startswith("return"):
        message += " (one line is an expression: drop `return`, or write the code on several lines)"
    return message


def _openai_calls(calls: list[ToolCall]) -> list[dict[str, Any]]:
    def arguments(value: Any) -> str:
        return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)

    return [{"id": c.get("id") or f"call_{i}", "type": "function",
             "function": {"name": c.get("name"), "arguments": arguments(c.get("arguments", {}))}}
            for i, c in enumerate(calls)]


def js_output(reply: Reply, ctx: GradingContext) -> Any:
    """`output` as promptfoo's OpenAI providers hand it: the text; a reply that made tool calls is the
    calls (`[{id, type: "function", function: {name, arguments}}]`, arguments a JSON string), or
    `{role, content, tool_calls}` when it has text too."""
    message = None if reply.whole_conversation or reply.turn is None else ctx.reply_for_turn(reply.turn)
    calls = message.get("tool_calls") or [] if message is not None else []
    if not calls:
        return reply.text
    openai = _openai_calls(calls)
    return {"role": "assistant", "content": reply.text, "tool_calls": openai} if reply.text else openai


def js_context(reply: Reply, params: JavascriptParams, ctx: GradingContext) -> dict[str, object]:
    users = [m for m in ctx.transcript if m["role"] == "user" and not m.get("not_sent")
             and (reply.whole_conversation or reply.turn is None or m.get("turn") == reply.turn)]
    context: dict[str, object] = {
        "vars": dict(ctx.vars), "prompt": users[-1]["content"] if users else "",
        "test": {"id": ctx.test_id, "vars": dict(ctx.vars)},
        "transcript": [dict(m) for m in ctx.transcript], "turn": reply.turn, "test_id": ctx.test_id,
        "labels": dict(ctx.labels)}
    if params.config is not None:
        context["config"] = params.config
    return context


def _unit(x: float) -> float:
    return min(1.0, max(0.0, x))


@assertion("javascript", params=JavascriptParams,
           example=("- javascript: output.includes('您好') && output.length < 200   # one line: an expression\n"
                    "- javascript: file://checks.js:polite   # fn(output, context), relative to the suite\n"
                    "  config: {min_length: 10}              # context.config"))
def javascript_check(reply: Reply, spec: AssertionSpec, ctx: GradingContext) -> Check:
    """JavaScript (Node.js) returning true/false, a score or {pass, score, reason}, as promptfoo's."""
    params: JavascriptParams = spec.params
    ref = file_ref(params.code)
    name = "javascript" if ref is None else f"{ref[0]}{':' + ref[1] if ref[1] else ''}"
    request = {"op": "run", **node_request(params.code, ctx.suite_dir), "output": js_output(reply, ctx),
               "context": js_context(reply, params, ctx)}
    answer = POOL.call(request, grade_time_limit())
    if not answer.get("ok"):
        logs = "; ".join(str(line) for line in answer.get("logs") or [])
        raise GradingError(f"{name}: {answer.get('message')}" + (f" (it printed: {logs[:300]})" if logs else ""))
    result = answer["result"]
    evidence = [Evidence(reply.turn, reply.text[:160])]
    kind = result["kind"]
    if kind == "bool":
        return Check.of(bool(result["value"]), say("returned", name=name, value=str(result["value"]).lower()), evidence)
    if kind == "number":
        value = float(result["value"])
        passed = value > 0 if spec.threshold is None else value >= spec.threshold
        rule = say("above_zero") if spec.threshold is None else say("at_least", n=f"{spec.threshold:g}")
        return Check.of(passed, say("returned_passes", name=name, value=f"{value:g}", rule=rule), evidence,
                        score=_unit(value), details={"returned": value})
    if kind == "grading":
        passed = bool(result["pass"])
        reason = str(result["reason"]) if result["reason"] else \
            say("returned", name=name, value=f"pass={str(passed).lower()}")  # the function's own words, else ours
        return Check.of(passed, reason, evidence, score=_unit(float(result["score"])))
    raise GradingError(f"{name} returned {result.get('got')}; expected true or false, a number or "
                       "{pass, score, reason} (a boolean, a number and a text, as promptfoo requires)"
                       + (" (several lines are a function body: `return` the verdict)"
                          if ref is None and "\n" in params.code.strip() else ""))
