"""Scopes: pick the replies an assertion reads, run its check, negate, combine."""

from __future__ import annotations

import inspect
import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from evalspec.assertions.outcome import error_text, failure_stands
from evalspec.config.model import AssertionSpec
from evalspec.core.errors import EvalspecError, GradingError
from evalspec.core.usercode import describe
from evalspec.extend.check import Check, Evidence, GradingContext, Reply, Undecided, say
from evalspec.extend.registry import resolve_type
from evalspec.extend.transcript import Message


@dataclass
class AssertionResult:
    """An assertion's verdict; `error` set with `passed` None means no verdict (`score` None too); `passed`
    False with an `error` is a failure that stands beside parts that could not be checked (`outcome`)."""

    type: str
    scope: Any
    passed: bool | None
    score: float | None
    reason: str = ""
    evidence: list[Evidence] = field(default_factory=list)
    error: str | None = None
    weight: float = 1.0
    severity: str = "major"
    metric: str | None = None
    threshold: float | None = None
    turn: int | None = None
    value: Any = None  # the rule as written (pattern, expected facts, ...), so reports can show it
    details: dict[str, Any] = field(default_factory=dict)
    from_defaults: bool = False  # the suite's `defaults: assert:` (they gate, but never dilute a curve)
    # one `{tokens, cost, cached}` per judge call made for this result, its answer usable or not (docs/en/rule-self-tests.md#verdicts-that-hold);
    # counted on the record (`judge_calls`, `judge_tokens`, `judge_cost`), not written with the assertion
    judge_usage: list[dict[str, Any]] = field(default_factory=list)
    skipped: bool = False  # not checked (its label is not in this recorded conversation): no verdict, no score
    description: str | None = None  # the rule's `description:` (why it exists), shown under it when it fails
    max_rate: float | None = None  # a critical rule gated on its breach rate's bound (docs/en/statistics.md)
    reason_zh: str | None = None  # the reason in Chinese (None: the same words as `reason`)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "type": self.type, "scope": self.scope, "pass": self.passed, "score": self.score,
            "reason": self.reason, "reason_zh": self.reason if self.reason_zh is None else self.reason_zh,
            "evidence": [e.to_json() for e in self.evidence], "error": self.error,
            "weight": self.weight, "severity": self.severity, "metric": self.metric,
            "threshold": self.threshold, "turn": self.turn, "value": self.value,
        }
        details = {k: v for k, v in self.details.items() if k != "jury"}
        if details:
            out["details"] = details
        if "jury" in self.details:  # each member's verdict or error (docs/en/judges.md#juries)
            out["jury"] = self.details["jury"]
        if self.from_defaults:
            out["default"] = True
        if self.skipped:
            out["skipped"] = True
        if self.description:
            out["description"] = self.description
        if self.max_rate is not None:
            out["max_rate"] = self.max_rate
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> AssertionResult:
        """A result as run.json stores it, read back (its `judge_usage` is counted on the record, not here)."""
        evidence = [Evidence(e.get("turn"), str(e.get("text", "")), str(e.get("note", "")))
                    for e in data.get("evidence") or []]
        return cls(data["type"], data.get("scope"), data.get("pass"), data.get("score"), data.get("reason") or "",
                   evidence, data.get("error"), data.get("weight", 1.0), data.get("severity", "major"),
                   data.get("metric"), data.get("threshold"), data.get("turn"), data.get("value"),
                   {**(data.get("details") or {}), **({"jury": data["jury"]} if data.get("jury") else {})},
                   bool(data.get("default")), skipped=bool(data.get("skipped")),
                   description=data.get("description"), max_rate=data.get("max_rate"),
                   reason_zh=data.get("reason_zh"))


def _reply(m: Message) -> Reply:
    return Reply(m["content"], m.get("turn"), m.get("latency_ms"), m.get("tokens"), m.get("cost"),
                 finish_reason=m.get("finish_reason"))


def _sum(values: list[Any]) -> Any:
    known = [v for v in values if v is not None]
    return sum(known) if known else None


def select_replies(spec: AssertionSpec, ctx: GradingContext) -> list[Reply]:
    """The replies a reply-kind assertion reads on its scope."""
    scope = spec.scope
    if isinstance(scope, dict):
        chosen = []
        for ref in scope["turns"]:
            m = ctx.reply_for_turn(ctx.resolve_turn(ref))
            if m is None:
                raise GradingError(f"no reply for turn {ref!r}")
            chosen.append(_reply(m))
        return chosen
    if scope == "turn":
        m = ctx.reply_for_turn(spec.turn or 0)
        if m is None:
            raise GradingError(f"no reply for turn {spec.turn}")
        return [_reply(m)]
    replies = ctx.replies()
    if not replies:
        raise GradingError("the transcript has no assistant reply")
    if scope == "last_response":
        return [_reply(replies[-1])]
    if scope == "conversation":
        return [Reply("\n".join(m["content"] for m in replies), None,
                      _sum([m.get("latency_ms") for m in replies]), _sum([m.get("tokens") for m in replies]),
                      _sum([m.get("cost") for m in replies]), whole_conversation=True)]
    return [_reply(m) for m in replies]  # each_turn, any_turn


async def _call(fn: Any, *args: Any) -> Check:
    result = fn(*args)
    if not isinstance(result, Check) and inspect.isawaitable(result):
        result = await result
    if not isinstance(result, Check):
        raise GradingError(f"check returned {type(result).__name__}, not a Check")
    if result.passed is not True and result.passed is not False or not _finite(result.score):
        raise GradingError(f"check returned pass={result.passed!r} score={result.score!r}: "
                           "expected a bool and a finite number")
    return result


def _finite(value: Any) -> bool:
    kind = type(value)
    if kind is float:
        return math.isfinite(value)
    return kind is int or isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _negate(check: Check) -> Check:
    """`not-` flips the verdict and the score; a failure says what was found that must not be there."""
    reason = check.said if check.passed is False else say("unexpected", reason=check.said)
    if type(check) is not Check:  # a plugin's subclass keeps its own fields
        return replace(check, passed=not check.passed, score=1.0 - check.score, reason=reason.en, reason_zh=reason.zh)
    return Check(not check.passed, 1.0 - check.score, reason.en, check.evidence, check.details, check.undecided,
                 reason.zh)


def _scope_json(scope: Any) -> Any:
    return dict(scope) if isinstance(scope, dict) else scope


def no_verdict(spec: AssertionSpec, error: str | None = None, reason: str = "") -> AssertionResult:
    """The result of an assertion that reached no verdict: an `error`, or a `reason` it was not run."""
    return AssertionResult(spec.name, _scope_json(spec.scope), None, None, reason, [], error, spec.weight,
                           spec.severity, spec.metric, spec.threshold, spec.turn, spec.value)


def judge_usage(check: Check) -> list[dict[str, Any]]:
    """The usage of each judge call behind a check's verdict (`details.verdicts[*]._judge`)."""
    if not isinstance(check.details, dict):
        return []
    verdicts = check.details.get("verdicts")
    lost = check.details.pop("_undecided_usage", None)  # the calls of parts that reached no verdict
    return [v.get("_judge") or {} for v in verdicts or [] if isinstance(v, dict)] + list(lost or [])


def _why(exc: BaseException) -> str:
    """What a check that raised says: evalspec's own errors by their message, anything else named."""
    if isinstance(exc, (EvalspecError, TimeoutError)):
        return str(exc) or type(exc).__name__
    return describe(exc)


async def evaluate(spec: AssertionSpec, ctx: GradingContext,
                   parts: list[Check | Undecided] | None = None) -> AssertionResult:
    """Run one assertion; any failure to reach a verdict becomes `error`, never pass or fail. Each reply on
    its scope is checked on its own: one that cannot be decided is an error of that reply, and the others'
    failure still stands beside it (`outcome`). Every judge call made on the way is in the result's
    `judge_usage`, those of an error included. `parts` (given by the caller that may abandon the check:
    `abandoned`) receives each reply's check, or its `Undecided`, in order as it is reached."""
    resolved = resolve_type(spec.type)
    if resolved is None:
        return no_verdict(spec, f"unknown assertion type {spec.type!r}")
    atype = resolved[0]
    if spec.turn is not None:
        ctx = ctx.until(spec.turn)
    checks: list[Check] = []
    undecided: list[Undecided] = []
    usage: list[dict[str, Any]] = []
    reached = parts if parts is not None else []
    try:
        if atype.kind == "conversation":
            checks.append(await _call(atype.fn, spec, ctx))
        else:
            for reply in select_replies(spec, ctx):
                try:
                    checks.append(await _call(atype.fn, reply, spec, ctx))
                    reached.append(checks[-1])
                except (Exception, SystemExit) as exc:  # a user's python check or a library blew up on this reply
                    undecided.append(Undecided(reply.turn, _why(exc)))
                    reached.append(undecided[-1])
                    usage += exc.usage if isinstance(exc, GradingError) else []
    except (Exception, SystemExit) as exc:
        result = no_verdict(spec, _why(exc))
        result.judge_usage = [u for c in checks for u in judge_usage(c)] + usage + \
            (exc.usage if isinstance(exc, GradingError) else [])
        return result
    if spec.negate:
        checks = [_negate(c) for c in checks]
    result = combine(spec, checks, undecided)
    result.judge_usage = [u for c in checks for u in judge_usage(c)] + usage
    return result


def abandoned(spec: AssertionSpec, ctx: GradingContext, parts: Sequence[Check | Undecided],
              error: str) -> AssertionResult:
    """The result of a check given up while it ran (it overran `options.grade_timeout`), after it reached
    `parts` (`evaluate`'s hook): the reply in progress is an error of that reply, those after it were not
    checked, and a failure among the replies it did check stands beside them (`outcome`). A check of the
    whole conversation is an error."""
    resolved = resolve_type(spec.type)
    try:
        replies = [] if resolved is None or resolved[0].kind == "conversation" else \
            select_replies(spec, ctx.until(spec.turn) if spec.turn is not None else ctx)
    except (Exception, SystemExit):
        replies = []
    left = replies[len(parts):]
    if not left:
        return no_verdict(spec, error)
    checks = [p for p in parts if isinstance(p, Check)]
    undecided = [p for p in parts if isinstance(p, Undecided)] + [Undecided(left[0].turn, error)]
    undecided += [Undecided(r.turn, f"not checked: the check was given up on turn {left[0].turn}")
                  for r in left[1:]]
    if spec.negate:
        checks = [_negate(c) for c in checks]
    result = combine(spec, checks, undecided)
    result.judge_usage = [u for c in checks for u in judge_usage(c)]
    return result


def combine(spec: AssertionSpec, checks: list[Check], undecided: Sequence[Undecided] = ()) -> AssertionResult:
    """One verdict from the checks of the replies on the spec's scope; an explicit `threshold` turns the
    combined score into the verdict. With `undecided` replies (or a check's own undecided parts) it is a
    failure beside the errors when the decided checks fail it whatever those would say, else an error."""
    inner = [u for c in checks for u in c.undecided]
    if undecided or inner:
        return _with_errors(spec, checks, list(undecided), inner)
    scope = spec.scope
    if scope == "any_turn":
        best = max(checks, key=lambda c: (c.passed, c.score))
        passed, score = any(c.passed for c in checks), max(c.score for c in checks)
        evidence = best.evidence if passed else [e for c in checks for e in c.evidence]
        reason = best.said if passed else say("no_reply_passed", n=len(checks), reason=checks[-1].said)
    elif len(checks) == 1:
        only = checks[0]
        passed, score, evidence, reason = only.passed, float(only.score), list(only.evidence), only.said
    else:
        failing = [c for c in checks if not c.passed]
        passed = not failing
        score = sum([c.score for c in checks]) / len(checks)
        evidence = [e for c in failing or checks for e in c.evidence]
        if failing:
            turns = [str(e.turn) for c in failing for e in c.evidence[:1]]
            reason = say("replies_failed", failed=len(failing), n=len(checks), turns=", ".join(turns),
                         reason=failing[0].said)
        else:
            reason = say("all_replies_passed", n=len(checks))
    details = checks[0].details if len(checks) == 1 else {}
    score = round(score, 6)
    if spec.threshold is not None:
        passed = score >= spec.threshold
    return AssertionResult(spec.name, _scope_json(scope), passed, score, reason.en, evidence, None, spec.weight,
                           spec.severity, spec.metric, spec.threshold, spec.turn, spec.value, details,
                           reason_zh=reason.zh)


def _with_errors(spec: AssertionSpec, checks: list[Check], outer: list[Undecided],
                 inner: list[Undecided]) -> AssertionResult:
    """A check some of whose parts reached no verdict (`outcome`): failed beside the errors, or an error."""
    parts: list[tuple[bool | None, float | None, float]] = [(c.passed, c.score, 1.0) for c in checks]
    parts += [(None, None, 1.0) for _ in outer]
    error = error_text(outer + inner)
    if not failure_stands(parts, spec.threshold, every=spec.scope != "any_turn"):
        return no_verdict(spec, error)
    failing = [c for c in checks if not c.passed] or checks
    score = round(sum(c.score for c in checks) / len(checks), 6)
    evidence = [e for c in failing for e in c.evidence] + [u.evidence() for u in outer + inner]
    reason = say("replies_failed_unchecked", failed=len(failing), n=len(checks) + len(outer), unchecked=len(outer),
                 reason=failing[0].said) if outer else failing[0].said
    details = checks[0].details if len(checks) == 1 else {}
    return AssertionResult(spec.name, _scope_json(spec.scope), False, score, reason.en, evidence, error, spec.weight,
                           spec.severity, spec.metric, spec.threshold, spec.turn, spec.value, details,
                           reason_zh=reason.zh)
