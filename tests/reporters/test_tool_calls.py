"""Reports show tool calls: a compact card in HTML (escaped), call lines in Markdown and JUnit failure text."""

from __future__ import annotations

from typing import Any

from evalspec.reporters.tools import calls_html, calls_text, failing_calls_text, teardown_text

TRANSCRIPT: list[dict[str, Any]] = [
    {"role": "user", "content": "我想试驾凌云", "turn": 1},
    {"role": "assistant", "content": "", "turn": 1, "intermediate": True,
     "tool_calls": [{"id": "c1", "name": "book_test_drive", "arguments": {"model": "凌云", "time": "<script>"}}]},
    {"role": "tool", "content": '{"booked": true}', "turn": 1, "tool_call_id": "c1", "name": "book_test_drive"},
    {"role": "assistant", "content": "已预约", "turn": 1},
    {"role": "user", "content": "谢谢", "turn": 2},
    {"role": "assistant", "content": "不客气", "turn": 2, "tool_calls": [{"id": "c2", "name": "noop", "arguments": {}}]},
]


def test_an_html_call_card_shows_name_arguments_and_result_escaped() -> None:
    card = str(calls_html(TRANSCRIPT[1], TRANSCRIPT))
    assert "<b>book_test_drive</b>" in card and "&lt;script&gt;" in card and "<script>" not in card
    assert "→ <code>{&#34;booked&#34;: true}</code>" in card
    assert str(calls_html(TRANSCRIPT[3], TRANSCRIPT)) == ""
    assert "→" not in str(calls_html(TRANSCRIPT[5], TRANSCRIPT))  # a reported call without a result


def test_failure_text_lists_the_calls_of_the_failing_turns() -> None:
    record = {"transcript": TRANSCRIPT, "assertions": [
        {"type": "not-before", "pass": False, "turn": None, "evidence": [{"turn": 1, "text": "x"}]},
        {"type": "contains", "pass": True, "turn": 2, "evidence": []}]}
    assert failing_calls_text(record) == [
        'turn 1: tool book_test_drive({"model": "凌云", "time": "<script>"}) → {"booked": true}']
    assert calls_text(record, None)[-1] == "turn 2: tool noop({})"
    assert teardown_text({"teardown": {"ok": False, "error": "boom"}}) == "teardown failed: boom"
    assert teardown_text({"teardown": {"ok": True}}) is None
