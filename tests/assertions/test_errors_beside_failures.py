"""An error never hides a failure, in every check family (docs/en/reports-and-gate.md#errors-and-failures):
a check that fails on one turn and cannot be decided on another is `failed` with the error beside it, and a
critical failure decides the test whatever errors follow."""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from evalspec.assertions.evaluate import AssertionResult
from tests.helpers import check, invoke, spec, transcript

STATE = {"slots": {"city": "北京"}, "handoff": True}


def with_state(*states: Any) -> list[dict[str, Any]]:
    messages = transcript(*[(f"问题{i}", f"回答{i}") for i in range(1, len(states) + 1)])
    for m in messages:
        if m["role"] == "assistant" and states[m["turn"] - 1] is not None:
            m["state"] = states[m["turn"] - 1]
    return messages


def test_a_state_check_failed_on_turn_1_and_without_state_on_turn_2_is_failed_with_the_error_beside_it() -> None:
    got = check("state: {path: handoff, equals: false}\nscope: each_turn", with_state(STATE, None))
    assert got.passed is False and got.score == 0.0
    assert got.error is not None and "turn 2 has no state" in got.error
    assert [(e.turn, e.note) for e in got.evidence] == [(1, ""), (2, "error")]


def test_a_check_that_passed_where_it_could_look_is_still_an_error() -> None:
    got = check("state: {path: handoff, equals: true}\nscope: each_turn", with_state(STATE, None))
    assert got.passed is None and got.error is not None and "turn 2 has no state" in got.error


def test_under_any_turn_a_failure_beside_an_error_is_not_decided() -> None:
    got = check("state: {path: handoff, equals: false}\nscope: any_turn", with_state(STATE, None))
    assert got.passed is None and got.error is not None


def test_a_threshold_the_errors_could_not_reach_is_failed() -> None:
    messages = with_state(STATE, STATE, None)
    assert check("state: {path: handoff, equals: false}\nscope: each_turn\nthreshold: 0.5", messages).passed is False
    assert check("state: {path: handoff, equals: false}\nscope: each_turn\nthreshold: 0.3", messages).passed is None


def test_a_session_rule_over_state_fails_on_its_match_whatever_a_turn_without_state_says() -> None:
    got = check("not-after: {state: handoff, after: 1}", with_state(STATE, None))
    assert got.passed is False and got.error is not None and "turn 2" in got.error
    assert [e.turn for e in got.evidence] == [1, 2]
    undecided = check("not-after: {state: handoff, after: 1}", with_state({"handoff": False}, None))
    assert undecided.passed is None and undecided.error is not None  # turn 2 might have matched


def test_a_python_check_that_raises_on_one_turn_fails_on_the_turn_it_judged(tmp_path: Path) -> None:
    (tmp_path / "c.py").write_text("def check(output, context):\n"
                                   "    if context['turn'] == 2:\n        raise ValueError('坏了')\n"
                                   "    return False\n", encoding="utf-8")
    got = check("python: c.py:check\nscope: each_turn", with_state(STATE, STATE), suite_dir=tmp_path)
    assert got.passed is False and got.error is not None and "ValueError: 坏了" in got.error


SUITE = """\
gate: {{max_errors: 1}}
tests:
  - id: red-line
    transcript:
      - user: 转人工
      - assistant: 好的
        state: {state}
      - user: 谢谢
      - assistant: 不客气
    assert:
      - state: {{path: handoff, equals: false}}
        scope: each_turn
        severity: critical
  - id: fine
    transcript: [{{user: 你好}}, {{assistant: 您好}}]
    assert: [{{contains: 您好}}]
"""


def test_a_state_red_line_broken_on_turn_1_fails_the_run_even_when_turn_2_has_no_state(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(SUITE.format(state=json.dumps(STATE, ensure_ascii=False)), encoding="utf-8")
    code, out = invoke("run", str(path), "-o", str(tmp_path / "run.json"), "-q")
    assert code == 1, out  # before: the red line was an error, within max_errors: 1, and the run was green
    record = json.loads((tmp_path / "run.json").read_text(encoding="utf-8"))["results"][0]
    assert record["test_id"] == "red-line"
    assert record["status"] == "failed" and record["critical_failed"] is True
    only = record["assertions"][0]
    assert only["pass"] is False and "turn 2 has no state" in only["error"]


def test_a_judged_check_the_judge_fails_on_one_turn_and_could_not_judge_on_another_is_failed(tmp_path: Path) -> None:
    from tests.assertions.helpers import go, judged

    with judged(['{"reason": "第一轮答非所问", "pass": false}', "I cannot judge this."]) as server:
        data = go(tmp_path, server, "      - llm-rubric: 回答切题\n        scope: each_turn\n")
    record = data["results"][0]
    rubric = record["assertions"][0]
    assert len(server.chats()) == 2  # both turns were asked
    assert rubric["pass"] is False and rubric["error"] and "turn 2" not in rubric["reason"]
    assert [(e["turn"], e.get("note")) for e in rubric["evidence"]] == [(1, None), (2, "error")]
    assert record["status"] == "failed"  # before: error, the judge's "fail" on turn 1 hidden


def off_loop(text: str, messages: list[dict[str, Any]], suite_dir: Path, limit: float) -> AssertionResult:
    from evalspec.assertions.offloop import evaluate_off_loop
    from evalspec.extend.check import GradingContext

    context = GradingContext(transcript=messages, labels={}, vars={}, test_id="t", turn=None, suite_dir=suite_dir)
    return asyncio.run(evaluate_off_loop([spec(text)], context, limit))[0]


def test_a_python_check_that_overruns_grade_timeout_on_turn_2_is_failed_by_its_failure_on_turn_1(
        tmp_path: Path) -> None:
    (tmp_path / "c.py").write_text("import threading\n\ndef check(output, context):\n"
                                   "    if context['turn'] == 2:\n        threading.Event().wait(60)\n"
                                   "    return '谢谢' in output\n", encoding="utf-8")
    messages = transcript(("问题1", "回答1"), ("问题2", "回答2"), ("问题3", "回答3"))
    got = off_loop("python: c.py:check\nscope: each_turn", messages, tmp_path, 0.5)
    assert got.passed is False, got  # before: an error, turn 1's failure lost
    assert got.error is not None and "timed out after 0.5s (options.grade_timeout)" in got.error
    assert "turn 3: not checked" in got.error
    assert [(e.turn, e.note) for e in got.evidence] == [(1, ""), (2, "error"), (3, "error")]
    passing = off_loop("not-python: c.py:check\nscope: each_turn", messages, tmp_path, 0.5)
    assert passing.passed is None and passing.error is not None  # turn 1 passed: a pass never stands beside it


@pytest.mark.skipif(shutil.which("node") is None, reason="Node.js is not installed")
def test_a_javascript_check_that_overruns_on_turn_2_is_failed_by_its_failure_on_turn_1(tmp_path: Path) -> None:
    code = "if (context.turn === 2) { while (true) {} }\nreturn output.includes('谢谢');"
    messages = transcript(("问题1", "回答1"), ("问题2", "回答2"))
    got = off_loop(f"javascript: {json.dumps(code, ensure_ascii=False)}\nscope: each_turn", messages, tmp_path, 0.5)
    assert got.passed is False, got  # before: an error, turn 1's failure lost
    assert got.error is not None and "timed out after 0.5s" in got.error
    assert [(e.turn, e.note) for e in got.evidence] == [(1, ""), (2, "error")]
