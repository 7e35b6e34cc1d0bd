"""Statuses, repeats and pass rules, drafts, xfail, curves and SLA gating — end to end through `run`."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalspec import run
from evalspec.play.runner import RunOptions
from evalspec.results.verdict import combine_repeats

FLAKY = '''
import itertools
_count = itertools.count()

def respond(messages, context):
    # repeat k answers "yes" when k is odd: 2 of 3 repeats pass
    return "yes" if context["repeat"] % 2 == 1 else "no"

def recall(messages, context):
    distance = sum(1 for m in messages if m["role"] == "user") - 2
    return "张三 北京" if distance < 3 else ("张三" if distance < 5 else "不记得")
'''


def go(tmp_path: Path, body: str, **options: object) -> dict:
    (tmp_path / "bot.py").write_text(FLAKY, encoding="utf-8")
    path = tmp_path / "s.yaml"
    path.write_text("providers:\n  - id: bot\n    python: bot.py:respond\n  - id: mem\n    python: bot.py:recall\n"
                    + body, encoding="utf-8")
    opts = RunOptions(run_dir=tmp_path / "run", use_cache=False, **options)  # type: ignore[arg-type]
    return run([path], options=opts).data


@pytest.mark.parametrize("rule,status", [("all", "failed"), ("majority", "passed"), ("any", "passed"),
                                         (0.6, "passed"), (0.7, "failed")])
def test_repeat_pass_rules(tmp_path: Path, rule: object, status: str) -> None:
    data = go(tmp_path, f"""\
tests:
  - id: t
    providers: [bot]
    repeat: {{n: 3, pass: {rule}}}
    conversation: [{{user: hi, assert: [{{equals: "yes"}}]}}]
""")
    (verdict,) = data["verdicts"]
    assert [r["status"] for r in data["results"]] == ["passed", "failed", "passed"]
    assert [r["test_id"] for r in data["results"]] == ["t#1", "t#2", "t#3"]
    assert verdict["status"] == status
    assert verdict["pass_rate"] == pytest.approx(2 / 3) and verdict["pass_hat_k"] is False
    assert verdict["score_mean"] == pytest.approx(2 / 3) and verdict["score_std"] > 0


def test_majority_is_strictly_more_than_half() -> None:
    recs = [{"status": "passed"}, {"status": "failed"}]
    assert combine_repeats(recs, "majority")[0] == "failed"


def test_xfail_and_xpassed_never_gate(tmp_path: Path) -> None:
    data = go(tmp_path, """\
tests:
  - id: known-bug
    providers: [bot]
    xfail: "bug #1"
    conversation: [{user: hi, assert: [{equals: "no"}]}]
  - id: fixed
    providers: [bot]
    xfail: true
    conversation: [{user: hi, assert: [{equals: "yes"}]}]
""")
    assert [r["status"] for r in data["results"]] == ["xfailed", "xpassed"]
    assert data["gate"]["exit_code"] == 0


def test_drafts_run_but_gate_only_with_include_drafts(tmp_path: Path) -> None:
    body = "tests:\n  - id: d\n    providers: [bot]\n    draft: true\n    conversation: [{user: hi, assert: [{equals: nope}]}]\n"
    data = go(tmp_path, body)
    assert data["results"][0]["status"] == "failed" and data["results"][0]["draft"] is True
    assert data["gate"]["exit_code"] == 0
    assert go(tmp_path, body, include_drafts=True)["gate"]["exit_code"] == 1


def test_threshold_with_weights(tmp_path: Path) -> None:
    data = go(tmp_path, """\
tests:
  - id: t
    providers: [bot]
    threshold: 0.7
    conversation: [{user: hi}]
    assert:
      - {equals: "yes", weight: 3}
      - {equals: "nope", weight: 1}
""")
    assert data["results"][0]["score"] == pytest.approx(0.75)
    assert data["results"][0]["status"] == "passed"


CURVE = """\
tests:
  - id: decay
    providers: [mem]
    matrix: {{distance: [1, 3, 5]}}
    repeat: 2
    curve: distance
    sla: [{{at: {at}, min_score: 0.8}}]
    conversation:
      - user: 我叫张三，在北京
      - filler: "{{{{ distance }}}}"
      - user: 还记得吗？
        assert: [{{memory-recall: {{name: 张三, city: 北京}}}}]
"""


def test_curve_points_half_life_failure_point_and_sla_met(tmp_path: Path) -> None:
    data = go(tmp_path, CURVE.format(at=2))
    (curve,) = data["curves"]
    assert [(p["value"], p["mean"], p["n"]) for p in curve["points"]] == [(1, 1.0, 2), (3, 0.5, 2), (5, 0.0, 2)]
    # a sample fails below the SLA minimum covering its point, else below 0.5: 0.5 at distance 3 holds (SPEC §17)
    assert curve["half_life"] == 5 and curve["failure_point"] == 5
    assert curve["sla"][0]["passed"] is True
    assert data["gate"]["exit_code"] == 0  # failing curve points do not gate


def test_missed_sla_fails_the_gate(tmp_path: Path) -> None:
    data = go(tmp_path, CURVE.format(at=3))
    assert data["curves"][0]["sla"][0]["missed_at"] == [3]
    assert data["gate"]["exit_code"] == 1 and "SLA missed" in data["gate"]["reasons"][0]


def test_each_suite_gate_applies_to_its_own_tests(tmp_path: Path) -> None:
    (tmp_path / "bot.py").write_text(FLAKY, encoding="utf-8")
    lenient = tmp_path / "lenient.yaml"
    strict = tmp_path / "strict.yaml"
    head = "providers:\n  - id: bot\n    python: bot.py:respond\n"
    test = "tests:\n  - id: t\n    repeat: 3\n    conversation: [{user: hi, assert: [{equals: 'yes'}]}]\n"
    lenient.write_text(head + "gate: {min_pass_rate: 0.0}\n" + test)
    strict.write_text(head + test)
    data = run([lenient, strict], options=RunOptions(run_dir=tmp_path / "r", use_cache=False)).data
    ok = {s["suite"]: s["ok"] for s in data["gate"]["suites"]}
    assert ok == {str(lenient): True, str(strict): False}
    assert data["gate"]["exit_code"] == 1
