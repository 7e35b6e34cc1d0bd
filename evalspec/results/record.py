"""One run.json record: a test instance × provider × repeat."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal, cast

from evalspec.assertions.evaluate import AssertionResult
from evalspec.config.model import TestSpec
from evalspec.core.redact import redact
from evalspec.extend.transcript import Message, system_messages
from evalspec.plan.build import Instance
from evalspec.results.rundata import (
    Exactly,
    JudgeFigures,
    Milestone,
    Record,
    SlaSpec,
    StatusName,
    Term,
    Usage,
    ref,
)
from evalspec.results.transcript import Transcript
from evalspec.results.verdict import decide, test_score

__all__ = ["Exactly", "Milestone", "Record", "conversation_error", "judge_figures", "make_record", "redecide", "ref",
           "tool_calls_paths", "usage_fields"]


def make_record(instance: Instance, transcript: Transcript, results: list[AssertionResult],
                duration_ms: float) -> Record:
    test, secrets = instance.test, instance.suite.secrets
    status, score, critical = _verdict(results, test, transcript.error)
    usage = usage_fields(system_messages(transcript.messages))
    judge = judge_figures([u for r in results for u in r.judge_usage] + transcript.judge_usage)
    record: Record = {
        "key": instance.key,
        "test_id": instance.test_id,
        "base_id": instance.base_id,
        "test": test.id,
        "name": test.name,
        "description": test.description,
        "suite": str(instance.suite.path),
        "provider": instance.provider.id,
        "repeat": instance.repeat,
        "repeat_rule": test.repeat.rule,
        "matrix": instance.matrix,
        "tags": sorted(set(test.tags) | set(instance.suite.tags)),
        "status": status,
        "score": round(score, 6) if score is not None else None,
        "threshold": test.threshold,
        "critical_failed": critical,
        "draft": test.draft,
        "xfail": test.xfail,
        "curve": test.curve,
        "chart": test.chart,
        "curve_summary": cast(Term | None, test.curve_summary),  # one of the terms (the suite schema's enum)
        "measured": bool(test.curve),  # a curve point: a measurement, shown as `measured`, never FAIL
        "sla": cast(list[SlaSpec], test.sla),  # {at, min_score} each (the suite schema's `sla` items)
        # free text (what the system said, reasons, errors) is redacted; ids and paths are structure
        "assertions": redact([r.to_json() for r in results], secrets),
        "transcript": redact(transcript.messages, secrets),
        "stop_reason": transcript.stop_reason,
        "error": _error(transcript.error, results, secrets),
        "duration_ms": round(duration_ms, 3),
        "calls": transcript.calls,
        "cached_calls": transcript.cached_calls,
        "failed_calls": transcript.failed_calls,
        "retries": transcript.retries,
        "tokens": usage["tokens"],
        "cost": usage["cost"],
        "prompt_tokens": usage["prompt_tokens"],
        "completion_tokens": usage["completion_tokens"],
        "strategy_calls": usage["strategy_calls"],
        "strategy_tokens": usage["strategy_tokens"],
        "strategy_cost": usage["strategy_cost"],
        "judge_calls": judge["judge_calls"],
        "judge_tokens": judge["judge_tokens"],
        "judge_cost": judge["judge_cost"],
    }
    if instance.simulator is not None:  # docs/en/agents.md#comparing-two-simulators
        record["simulator"] = instance.simulator.id
    if test.reduce:  # the instances are one verdict (docs/en/recorded-conversations.md)
        record["reduce"] = cast(Literal["min", "mean"], test.reduce)
    if instance.suite.coverage:  # docs/en/coverage.md (its module loads only for a suite that has one)
        from evalspec.results.coverage import instance_covers

        if covers := instance_covers(instance):
            record["covers"] = covers
    if instance.world is not None:  # docs/en/world.md: what the bot did, beside what it said
        record["world_initial"] = redact(instance.world, secrets)
        record["world"] = redact(transcript.world if transcript.world is not None else instance.world, secrets)
    if transcript.attribution is not None and status == "error":  # the simulated user's slip, not the bot's
        record["attribution"], record["attribution_by"] = transcript.attribution, "run"
    if test.simulate is not None and test.simulate.milestones:  # docs/en/agents.md#milestones
        from evalspec.assertions.journey import milestone_goals, milestone_statuses

        goals = milestone_goals(test.simulate.milestones)
        statuses = milestone_statuses(goals, transcript.messages, cut_short=transcript.error is not None)
        record["milestones"] = cast(list[Milestone], redact(statuses, secrets))
    if paths := tool_calls_paths(transcript.messages):
        record["tool_calls_paths"] = paths
    if transcript.attack is not None:
        record["attack"] = redact(transcript.attack, secrets)
        if transcript.stop_reason == "breached":
            record["score"] = 0.0  # an attempt that broke a red line scores 0: the test's score is 1 - breached share
    return record


def conversation_error(record: Record) -> str | None:
    """The error the record's conversation ended in (not a check's), or None."""
    return record.get("error") if record["stop_reason"] == "error" else None


def _verdict(results: list[AssertionResult], test: TestSpec, error: str | None) -> tuple[StatusName, float | None, bool]:
    """status, score and whether a critical assertion failed, from the record's checks."""
    status, score, critical = decide(results, test.threshold, error, test.xfail)
    if test.curve:  # a curve point's score is its test's own assertions: suite defaults gate, never dilute
        score = test_score([r for r in results if not r.from_defaults])
    return status, score, critical


def _error(error: str | None, results: list[AssertionResult], secrets: set[str]) -> str | None:
    """The record's `error`: the conversation's, else its first check's (redacted)."""
    found: str | None = redact(error or next((f"{r.type}: {r.error}" for r in results if r.error), None), secrets)
    return found


def redecide(record: Record, results: list[AssertionResult], instance: Instance,
             usage: Sequence[Mapping[str, Any]]) -> None:
    """The record's verdict again, from `results` (all of its assertions: `select-best` is decided after the
    conversation, `play.compare`), with the judge calls `usage` lists added to its figures."""
    test, secrets = instance.test, instance.suite.secrets
    error = conversation_error(record)
    status, score, critical = _verdict(results, test, error)
    record["status"], record["critical_failed"] = status, critical
    record["score"] = round(score, 6) if score is not None else None
    record["assertions"] = redact([r.to_json() for r in results], secrets)
    record["error"] = _error(error, results, secrets)
    added = judge_figures(usage)
    record["judge_calls"] = record.get("judge_calls", 0) + added["judge_calls"]
    if (tokens := added["judge_tokens"]) is not None:
        record["judge_tokens"] = (record.get("judge_tokens") or 0) + tokens
    if (cost := added["judge_cost"]) is not None:
        record["judge_cost"] = (record.get("judge_cost") or 0) + cost


def judge_figures(usage: Sequence[Mapping[str, Any]]) -> JudgeFigures:
    """`judge_calls`, `judge_tokens` and `judge_cost` of the model calls evalspec made on its own behalf (judge,
    second opinion, simulated user, attacker), one `{tokens, cost, cached}` each, usable answer or not: the
    calls this run made (a cached answer cost nothing); tokens and cost None when no call reported them."""
    made = [u for u in usage if u and not u.get("cached")]
    tokens = [int(u["tokens"]) for u in made if u.get("tokens") is not None]
    costs = [float(u["cost"]) for u in made if u.get("cost") is not None]
    return {"judge_calls": len(made), "judge_tokens": sum(tokens) if tokens else None,
            "judge_cost": sum(costs) if costs else None}


def tool_calls_paths(messages: list[Message]) -> dict[str, bool]:
    """Each http `tool_calls:` path of the conversation: was its key in some turn's response."""
    found: dict[str, bool] = {}
    for m in messages:
        if isinstance(path := m.get("tool_calls_path"), dict):
            found[str(path.get("path"))] = found.get(str(path.get("path")), False) or bool(path.get("found"))
    return found


def usage_fields(replies: Sequence[Mapping[str, Any]]) -> Usage:
    """The replies' tokens and cost, prompt/completion tokens, and the context strategy's own calls,
    tokens and cost: each a sum, None when no reply has it (strategy calls: 0)."""
    written = set().union(*replies)  # most replies have only some of these keys

    def total(key: str) -> Any:
        values = [m[key] for m in replies if m.get(key) is not None] if key in written else []
        return sum(values) if values else None

    return {"tokens": total("tokens"), "cost": total("cost"), "prompt_tokens": total("prompt_tokens"),
            "completion_tokens": total("completion_tokens"), "strategy_calls": total("strategy_calls") or 0,
            "strategy_tokens": total("strategy_tokens"), "strategy_cost": total("strategy_cost")}
