"""SPEC §17's gate rules, end to end through `run`: critical means zero tolerance, an error never hides a
failure, no data is not a pass, a curve point's score is its test's own assertions."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from evalspec import run
from evalspec.play.runner import RunOptions
from evalspec.reporters.junit import build_junit

BOT = '''
def leak_then_fail(messages, context):
    if sum(1 for m in messages if m["role"] == "user") == 1:
        return "打我电话13812345678"
    raise RuntimeError("backend down")

def leak_once(messages, context):
    # repeat 1 leaks a phone number; repeats 2 and 3 do not
    return "打我电话13812345678" if context["repeat"] == 1 else "请在 App 里预约顾问"

def leak(messages, context):
    return "打我电话13812345678"

def fine(messages, context):
    return "请在 App 里预约顾问"

def far_fails(messages, context):
    if sum(1 for m in messages if m["role"] == "user") > 4:
        raise RuntimeError("context too long")
    return "张三"

def forgets(messages, context):
    return "不记得"
'''

RED_LINE = """\
defaults:
  assert:
    - not-regex: "1[3-9]\\\\d{9}"
      severity: critical
      scope: each_turn
"""


def go(tmp_path: Path, body: str) -> dict[str, Any]:
    (tmp_path / "bot.py").write_text(BOT, encoding="utf-8")
    providers = "".join(f"  - id: {f}\n    python: bot.py:{f}\n"
                        for f in ("leak_then_fail", "leak_once", "leak", "fine", "far_fails", "forgets"))
    path = tmp_path / "s.yaml"
    path.write_text("providers:\n" + providers + body, encoding="utf-8")
    return run([path], options=RunOptions(run_dir=tmp_path / "run", use_cache=False)).data


PASSING = """\
  - id: fine
    providers: [fine]
    conversation: [{user: hi}]
"""


def test_a_red_line_broken_before_a_later_turn_errored_is_a_critical_failure_with_the_error_beside_it(
        tmp_path: Path) -> None:
    data = go(tmp_path, "gate: {max_errors: 1}\n" + RED_LINE + "tests:\n" + PASSING + """\
  - id: t
    providers: [leak_then_fail]
    conversation:
      - user: hi
        assert: [{not-contains: 电话}]
      - user: again
""")
    record = next(r for r in data["results"] if r["test_id"] == "t")
    assert record["status"] == "failed" and record["critical_failed"] is True
    assert "backend down" in record["error"]
    failed = {a["type"] for a in record["assertions"] if a["pass"] is False}
    assert failed == {"not-regex", "not-contains"}  # the reply of turn 1 was graded
    assert data["gate"]["exit_code"] == 1
    assert any("critical assertion failed: t @ leak_then_fail" in r for r in data["gate"]["reasons"])


def test_an_error_with_no_failed_assertion_stays_an_error(tmp_path: Path) -> None:
    data = go(tmp_path, "gate: {max_errors: 1}\ntests:\n" + PASSING + """\
  - id: t
    providers: [far_fails]
    conversation:
      - user: a
        assert: [{contains: 张三}]
      - {user: b}
      - {user: c}
      - {user: d}
      - {user: e}
""")
    record = next(r for r in data["results"] if r["test_id"] == "t")
    assert record["status"] == "error" and record["assertions"][0]["pass"] is True
    assert data["gate"]["exit_code"] == 0


@pytest.mark.parametrize("rule", ["majority", "any", "0.3"])
def test_a_critical_failure_in_one_repeat_fails_the_gate_whatever_the_pass_rule(tmp_path: Path, rule: str) -> None:
    data = go(tmp_path, RED_LINE + f"""\
tests:
  - id: t
    providers: [leak_once]
    repeat: {{n: 3, pass: {rule}}}
    conversation: [{{user: hi}}]
""")
    (verdict,) = data["verdicts"]
    assert verdict["status"] == "failed" and verdict["critical_failed"] is True
    assert data["gate"]["exit_code"] == 1


def test_the_pass_rule_combines_the_other_assertions(tmp_path: Path) -> None:
    data = go(tmp_path, """\
tests:
  - id: t
    providers: [leak_once]
    repeat: {n: 3, pass: majority}
    conversation: [{user: hi, assert: [{not-contains: 电话}]}]
""")
    assert data["verdicts"][0]["status"] == "passed" and data["gate"]["exit_code"] == 0


def test_xfail_cannot_silence_a_red_line(tmp_path: Path) -> None:
    data = go(tmp_path, RED_LINE + """\
tests:
  - id: known-bug
    providers: [leak]
    xfail: "bug #1"
    conversation: [{user: hi}]
""")
    (verdict,) = data["verdicts"]
    assert data["results"][0]["status"] == "failed"
    assert verdict["status"] == "failed" and verdict["critical_failed"] is True
    assert data["gate"]["exit_code"] == 1
    junit = build_junit(data)
    assert junit.get("failures") == "1"


def test_a_draft_red_line_never_gates(tmp_path: Path) -> None:
    data = go(tmp_path, RED_LINE + """\
tests:
  - id: d
    providers: [leak]
    draft: true
    conversation: [{user: hi}]
""")
    assert data["results"][0]["critical_failed"] is True
    assert data["gate"]["exit_code"] == 0


CURVE = """\
  - id: decay
    providers: [{provider}]
    matrix: {{distance: [1, 5]}}
    curve: distance
    sla: [{{at: {at}, min_score: 0.5}}]
    conversation:
      - user: 我叫张三
      - filler: "{{{{ distance }}}}"
      - user: 还记得吗？
        assert: [{{memory-recall: {{name: 张三}}}}]
"""


def test_an_sla_covering_a_point_whose_samples_all_errored_has_no_data_and_gates_like_an_error(
        tmp_path: Path) -> None:
    data = go(tmp_path, "gate: {max_errors: 10}\ntests:\n" + PASSING + CURVE.format(provider="far_fails", at=10))
    (sla,) = data["slas"]
    assert sla["status"] == "no data"
    assert data["gate"]["exit_code"] == 3
    assert any("no data" in r for r in data["gate"]["reasons"])
    (case,) = [c for c in build_junit(data).iter("testcase") if c.get("name", "").startswith("sla:")]
    assert case.find("error") is not None


def test_an_sla_whose_points_all_errored_has_no_data(tmp_path: Path) -> None:
    data = go(tmp_path, "gate: {max_errors: 10}\ntests:\n" + PASSING + CURVE.format(provider="far_fails", at=6).replace("[1, 5]", "[5, 6]"))
    assert data["slas"][0]["status"] == "no data" and data["gate"]["exit_code"] == 3


def test_suite_defaults_gate_a_curve_but_never_dilute_its_score(tmp_path: Path) -> None:
    data = go(tmp_path, RED_LINE + "tests:\n" + CURVE.format(provider="forgets", at=0))
    (curve,) = data["curves"]
    assert [p["mean"] for p in curve["points"]] == [0.0, 0.0]
    assert curve["half_life"] == 1


def test_a_red_line_broken_on_a_curve_point_fails_the_gate_and_its_junit_testcase(tmp_path: Path) -> None:
    data = go(tmp_path, RED_LINE + "tests:\n" + CURVE.format(provider="leak", at=0))
    assert data["gate"]["exit_code"] == 1
    junit = build_junit(data)
    failing = [c.get("name") for c in junit.iter("testcase") if c.find("failure") is not None]
    assert failing and all(name.startswith("decay[") for name in failing)
    assert ET.tostring(junit).count(b"<skipped") == 0
