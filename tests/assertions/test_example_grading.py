"""Example transcripts (SPEC §18) are graded by the real checks, numbered as the runner numbers turns."""

from __future__ import annotations

import asyncio
from pathlib import Path

from evalspec.assertions.evaluate import evaluate
from evalspec.config.rule_examples import example_transcript
from evalspec.extend.check import GradingContext
from evalspec.plan.examples import as_tried
from tests.helpers import spec


def grade(rule: str, example: object, under_turn: int | None = None) -> bool | None:
    s = spec(rule, under_turn)
    transcript, labels = example_transcript(example)
    ctx = GradingContext(transcript=transcript, labels=labels, vars={}, test_id="t", turn=None, suite_dir=Path("."))
    return asyncio.run(evaluate(as_tried(s, example), ctx)).passed


def test_a_transcript_example_numbers_turns_and_keeps_tool_rounds() -> None:
    example = [{"user": "北京有瑶光吗", "label": "ask"},
               {"assistant": "", "tool_calls": [{"name": "lookup_stock", "arguments": {"city": "北京"}}]},
               {"assistant": "有现车"}, {"user": "周六十点", "label": "time"},
               {"assistant": "", "tool_calls": [{"name": "book_test_drive"}]}, {"assistant": "已预约"}]
    transcript, labels = example_transcript(example)
    assert labels == {"ask": 1, "time": 2}
    assert [(m["role"], m["turn"], bool(m.get("intermediate"))) for m in transcript] == [
        ("user", 1, False), ("assistant", 1, True), ("assistant", 1, False),
        ("user", 2, False), ("assistant", 2, True), ("assistant", 2, False)]
    assert grade("tool-sequence: {calls: [lookup_stock, book_test_drive], mode: strict}", example) is True
    assert grade("not-before: {tool: book_test_drive, turn: time}", example) is True
    assert grade("tool-called: {name: lookup_stock, args: {city: 上海}}", example) is False


def test_a_reply_example_of_a_turn_rule_is_graded_as_that_turn_s_reply() -> None:
    assert grade("not-regex: '1[3-9]\\d{9}'", "打我电话13812345678", under_turn=3) is False
    assert grade("contains: 隐私", "为了保护隐私", under_turn=2) is True
    assert grade("contains: 隐私", 12345) is False  # a number written in YAML is its text
