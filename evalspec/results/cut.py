"""Replies stored cut (`options.max_reply_chars`) keep the verdicts reached on the whole reply (docs/en/rule-self-tests.md#verdicts-that-hold,
"`grade` sees what `run` saw").

`run` grades whole replies, then stores each long one cut, with its full length (`original_chars`) and
where it was cut (`cut_at`); a record holding a cut reply names each assertion's rule (`rule`, a digest of
the rule as planned). `grade` keeps the recorded verdict of every unchanged rule there, and makes a rule
that is new or changed an error on a cut reply it reads, since what it would read was not stored.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

from evalspec.assertions.evaluate import AssertionResult
from evalspec.config.model import AssertionSpec
from evalspec.extend.transcript import Message
from evalspec.results.record import Record


def cut_replies(messages: list[Message]) -> dict[int | None, int]:
    """Turn -> the characters kept of that turn's reply, for every reply stored cut."""
    return {m.get("turn"): int(m.get("cut_at") or len(m.get("content") or ""))
            for m in messages if m.get("role") == "assistant" and m.get("original_chars")}


def rule_id(spec: AssertionSpec) -> str:
    """A digest of everything that makes a rule's verdict: its type, value, options, scope, turn and weights."""
    fields = [spec.name, spec.value, spec.options, spec.scope, spec.turn, spec.threshold, spec.weight,
              spec.severity, spec.metric, spec.provider]
    text = json.dumps(fields, ensure_ascii=False, sort_keys=True, default=repr)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def name_rules(record: Record, specs: list[AssertionSpec]) -> None:
    """Give each assertion of a record holding a cut reply its rule's digest (`grade` compares them)."""
    if cut_replies(record["transcript"]) and len(specs) == len(record["assertions"]):
        for checked, spec in zip(record["assertions"], specs):
            checked["rule"] = rule_id(spec)


class KeptResult(AssertionResult):
    """A verdict `run` reached on the whole reply, written back as it was recorded."""

    recorded: Mapping[str, Any]

    def to_json(self) -> dict[str, Any]:
        return dict(self.recorded)


def kept(recorded: Mapping[str, Any]) -> AssertionResult:
    result = KeptResult(recorded["type"], recorded["scope"], recorded["pass"], recorded["score"],
                        reason=recorded.get("reason", ""), reason_zh=recorded.get("reason_zh"), error=recorded.get("error"),
                        weight=recorded.get("weight", 1.0), severity=recorded.get("severity", "major"),
                        metric=recorded.get("metric"), threshold=recorded.get("threshold"),
                        turn=recorded.get("turn"), value=recorded.get("value"))
    result.recorded = recorded
    return result


def _reads_cut(spec: AssertionSpec, cut: dict[int | None, int]) -> int | None:
    """Where the cut reply this rule reads was cut, or None when it reads none (a turn's rule on a whole reply)."""
    if spec.scope == "turn" and spec.turn is not None:
        return cut.get(spec.turn)
    return min(cut.values())


def regraded_on_cut(record: Mapping[str, Any], specs: list[AssertionSpec],
                    results: list[AssertionResult]) -> list[AssertionResult]:
    """`results` (graded on the stored transcript) with run's verdict kept for every unchanged rule and an
    error for every new or changed one that reads a cut reply."""
    cut = cut_replies(record["transcript"])
    if not cut:
        return results
    recorded: dict[str, list[Mapping[str, Any]]] = {}  # the checks the run stored, by rule
    for checked in record.get("assertions") or []:
        if checked.get("rule"):
            recorded.setdefault(checked["rule"], []).append(checked)
    out: list[AssertionResult] = []
    for spec, result in zip(specs, results):
        same = recorded.get(rule_id(spec))
        if same:
            out.append(kept(same.pop(0)))
        elif (at := _reads_cut(spec, cut)) is not None:
            out.append(AssertionResult(
                result.type, result.scope, None, None, weight=result.weight, severity=result.severity,
                metric=result.metric, threshold=result.threshold, turn=result.turn, value=result.value,
                error=f"the stored reply was cut at {at:,} characters (options.max_reply_chars): this rule is "
                      "new or changed since the run and cannot be graded on what was stored; run the test again"))
        else:
            out.append(result)
    return out
