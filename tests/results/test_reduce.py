"""`reduce: min | mean` (SPEC §19): a matrix test's instances are one verdict in the pass rate, the
metrics and the gate, scored by the minimum (or mean) of their scores; each instance is still listed."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalspec import run
from evalspec.config import load_suites
from evalspec.core.errors import ConfigError
from evalspec.play.runner import RunOptions

BOT = '''
def respond(messages, context):
    if messages[-1]["content"] == "boom":
        raise RuntimeError("the bot is down")
    # the reply names how many user turns it saw: "a b" on turn 2, "a b c" on turn 3
    return " ".join("abc"[:sum(1 for m in messages if m["role"] == "user")])
'''


def go(tmp_path: Path, body: str) -> dict:
    (tmp_path / "bot.py").write_text(BOT, encoding="utf-8")
    path = tmp_path / "s.yaml"
    path.write_text("providers: [{id: bot, python: bot.py:respond}]\n" + body, encoding="utf-8")
    return run([path], options=RunOptions(run_dir=tmp_path / "run", use_cache=False)).data


SUITE = """\
tests:
  - id: t
    matrix: {{n: [1, 2, 3]}}
    {reduce}
    {threshold}
    conversation:
      - user: "{{{{ n }}}}"
        assert:
          - {{icontains: a, metric: m}}
          - icontains: "{{{{ 'c' if n == 1 else 'a' }}}}"
  - id: plain
    conversation: [{{user: hi, assert: [{{icontains: a}}]}}]
"""


@pytest.mark.parametrize("reduce,threshold,status,score", [
    ("min", "", "passed", 0.5),  # the lowest instance (n=1) scores 0.5: it reaches the default 0.5
    ("min", "threshold: 0.6", "failed", 0.5),
    ("mean", "threshold: 0.8", "passed", pytest.approx(5 / 6)),
    ("mean", "threshold: 0.9", "failed", pytest.approx(5 / 6)),
])
def test_the_instances_are_one_verdict_scored_by_their_min_or_mean(
        tmp_path: Path, reduce: str, threshold: str, status: str, score: object) -> None:
    data = go(tmp_path, SUITE.format(reduce=f"reduce: {reduce}", threshold=threshold))
    assert [r["test_id"] for r in data["results"]] == ["t[n=1]", "t[n=2]", "t[n=3]", "plain"]  # all listed
    assert [(v["test_id"], v["n"]) for v in data["verdicts"]] == [("t", 3), ("plain", 1)]
    verdict = data["verdicts"][0]
    assert verdict["status"] == status and verdict["score_mean"] == score and verdict["reduce"] == reduce
    gate = data["gate"]["suites"][0]
    assert gate["passed"] + gate["failed"] == 2  # the matrix test counts once in the pass rate
    assert data["summary"]["verdicts"] == 2 and data["summary"]["records"] == 4
    (metric,) = data["summary"]["metrics"]
    assert metric["total"] == 1 and metric["passed"] == 1  # and once in the metrics


def test_without_reduce_each_instance_is_a_verdict(tmp_path: Path) -> None:
    data = go(tmp_path, SUITE.format(reduce="", threshold=""))
    assert [v["test_id"] for v in data["verdicts"]] == ["t[n=1]", "t[n=2]", "t[n=3]", "plain"]
    assert "reduce" not in data["verdicts"][0] and "reduce" not in data["results"][0]
    assert data["gate"]["suites"][0]["failed"] == 1 and data["summary"]["metrics"][0]["total"] == 3


def test_an_error_in_one_instance_is_the_tests_error(tmp_path: Path) -> None:
    data = go(tmp_path, """\
tests:
  - id: t
    matrix: {n: [1, 2]}
    reduce: mean
    conversation:
      - user: "{{ 'boom' if n == 2 else 'hi' }}"
        assert: [{icontains: a}]
""")
    (verdict,) = data["verdicts"]
    assert verdict["status"] == "error" and data["gate"]["suites"][0]["errors"] == 1


def test_reduce_without_a_matrix_is_an_error_with_its_line(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text("providers: [{id: bot, python: bot.py:respond}]\ntests:\n  - id: t\n    reduce: min\n"
                    "    conversation: [{user: hi, assert: [{icontains: a}]}]\n", encoding="utf-8")
    (tmp_path / "bot.py").write_text(BOT, encoding="utf-8")
    with pytest.raises(ConfigError) as exc:
        load_suites([path])
    assert "s.yaml:4" in str(exc.value) and "has no 'matrix'" in str(exc.value)


def test_until_turn_plays_the_golden_history_before_the_sent_turn(tmp_path: Path) -> None:
    data = go(tmp_path, """\
tests:
  - id: t
    matrix: {turn: [2, 3]}
    reduce: min
    until_turn: "{{ turn }}"
    conversation:
      - user: one
      - assistant: golden one
      - user: two
        assert: [{icontains: b}]
      - assistant: golden two
      - user: three
        assert: [{icontains: c}]
      - assistant: golden three
""")
    sent = [[m["content"] for m in r["transcript"]] for r in data["results"]]
    assert sent == [["one", "golden one", "two", "a b"],
                    ["one", "golden one", "two", "golden two", "three", "a b c"]]
    assert [[a["turn"] for a in r["assertions"]] for r in data["results"]] == [[2], [3]]  # history is not graded
    assert data["verdicts"][0]["status"] == "passed"
