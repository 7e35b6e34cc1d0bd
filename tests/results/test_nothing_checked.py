"""Nothing checked is not a pass (docs/en/reports-and-gate.md#statuses): a rule whose anchors are not in the
conversation is skipped, a conversation whose every rule was skipped is `skipped` (never passed, never in the
pass rate), and a run in which nothing else was reached exits 3."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from evalspec.assertions.grade import GradingInput, grade
from tests.helpers import invoke, spec, transcript

SUITE = """\
labels:
  purchase_signal: 分期|首付
tests:
  - id: no-signal
    transcript: [{user: 随便看看}, {assistant: 欢迎}]
    assert:
      - within: {pattern: 利率, after: purchase_signal}
"""


def run(tmp_path: Path, text: str) -> tuple[int, str, dict[str, Any]]:
    path = tmp_path / "s.yaml"
    path.write_text(text, encoding="utf-8")
    code, out = invoke("run", str(path), "-o", str(tmp_path / "run.json"))
    return code, out, json.loads((tmp_path / "run.json").read_text(encoding="utf-8"))


def test_a_recorded_conversation_whose_every_rule_was_skipped_is_skipped_and_the_run_exits_3(tmp_path: Path) -> None:
    code, out, data = run(tmp_path, SUITE)
    assert code == 3, out  # before: passed, 100 %, exit 0
    record = data["results"][0]
    assert record["status"] == "skipped" and record["score"] is None
    assert record["assertions"][0]["skipped"] is True
    assert data["gate"]["pass_rate"] is None and data["summary"]["skipped"] == 1
    assert "no gated verdict was reached: 1 skipped" in data["gate"]["reasons"]
    assert "1 skipped" in out


def test_a_skipped_conversation_is_left_out_of_the_pass_rate_beside_one_that_passed(tmp_path: Path) -> None:
    code, out, data = run(tmp_path, SUITE + "  - id: ok\n    transcript: [{user: 你好}, {assistant: 您好}]\n"
                                           "    assert: [{contains: 您好}]\n")
    assert code == 0, out
    assert [r["status"] for r in data["results"]] == ["skipped", "passed"]
    assert data["gate"]["pass_rate"] == 1.0 and data["gate"]["suites"][0]["passed"] == 1


def test_a_listed_turn_the_conversation_does_not_have_is_skipped_and_the_others_are_checked() -> None:
    messages = transcript(("你好", "您好"), ("再见", "再见"))
    specs = [spec("contains: 您好\nscope: {turns: [5]}"), spec("contains: 您好\nscope: {turns: [1, 5]}"),
             spec("contains: 您好", under_turn=3)]
    missing, partly, attached = asyncio.run(grade(GradingInput("t", specs, {}, {}, Path(".")), messages))
    assert missing.skipped is True and missing.reason == "turn 5 is not in this conversation"
    assert partly.skipped is False and partly.passed is True
    assert attached.skipped is True and attached.reason == "turn 3 is not in this conversation"
