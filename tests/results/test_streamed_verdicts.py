"""Verdicts made as the records stream by (docs/en/scale-and-ray.md#memory): records read back from disk in
plan order give exactly the verdicts, summary and gate that the whole list in memory gives, and a large
run's verdicts are a `DiskRows`."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from evalspec import run
from evalspec.play.runner import RunOptions
from evalspec.results.aggregate import finalize
from evalspec.results.stream import DiskRows, light
from evalspec.results.verdict import CRITICAL_MOST, Tally, Verdict, VerdictTally

BOT = '''
def respond(messages, context):
    # repeat k answers "是" when k is odd: 2 of 3 repeats pass
    return "是，收到" if context["repeat"] % 2 == 1 else "否"

def other(messages, context):
    return "是，" + messages[-1]["content"]
'''

SUITE = """\
providers:
  - {id: bot, python: bot.py:respond}
  - {id: two, python: bot.py:other}
tests:
  - id: rep
    repeat: {n: 3, pass: majority}
    conversation: [{user: 你好, assert: [{contains: 是, metric: 礼貌}, {contains: 收到}]}]
  - id: mx
    matrix: {n: [1, 2]}
    repeat: 2
    conversation: [{user: "第{{ n }}次", assert: [{contains: "{{ n }}", metric: 回显}]}]
  - id: red
    matrix: {n: [1, 2, 3]}
    reduce: min
    conversation: [{user: "{{ n }}", assert: [{contains: "{{ 'x' if n == 1 else '是' }}", metric: 底线}]}]
  - id: draft
    draft: true
    conversation: [{user: 草稿, assert: [{equals: 不会}]}]
  - id: known
    xfail: "bug #1"
    conversation: [{user: 已知, assert: [{equals: 不会}]}]
  - id: decay
    matrix: {distance: [1, 2]}
    repeat: 2
    curve: distance
    sla: [{at: 2, min_score: 0.8}]
    conversation: [{user: "{{ distance }}", assert: [{contains: 是}]}]
"""

AGGREGATES = ("verdicts", "curves", "slas", "summary", "gate")


def played(tmp_path: Path) -> dict[str, Any]:
    (tmp_path / "bot.py").write_text(BOT, encoding="utf-8")
    (tmp_path / "s.yaml").write_text(SUITE, encoding="utf-8")
    data: dict[str, Any] = run([tmp_path / "s.yaml"], options=RunOptions(run_dir=tmp_path / "run",
                                                                         use_cache=False)).data
    return data


def test_streamed_records_give_the_verdicts_and_figures_of_the_whole_list(tmp_path: Path) -> None:
    data = played(tmp_path)
    whole = finalize({**copy.deepcopy(data), "results": list(data["results"])}, None, False)
    streamed = finalize({**copy.deepcopy(data), "results": DiskRows(light(r) for r in data["results"])}, None, False,
                        stream=True)
    assert isinstance(streamed["verdicts"], DiskRows) and isinstance(whole["verdicts"], list)
    for key in AGGREGATES:
        assert streamed[key] == whole[key], key
    # the run holds every kind it is meant to: repeats, 2 providers, a matrix, a draft, xfail, a curve, reduce
    verdicts = whole["verdicts"]
    assert {v["provider"] for v in verdicts} == {"bot", "two"}
    assert {v["category"] for v in verdicts} >= {"passed", "failed", "drafts", "xfailed", "measured"}
    assert [v["test_id"] for v in verdicts if v.get("reduce")] == ["red", "red"]
    assert any(v.get("c") is not None for v in verdicts) and whole["summary"]["pass_at_k"]
    assert {m["metric"] for m in whole["summary"]["metrics"]} == {"礼貌", "回显", "底线"}
    assert [m["total"] for m in whole["summary"]["metrics"] if m["metric"] == "底线"] == [1, 1]  # one per provider


def test_a_reduced_test_closes_when_the_next_test_starts() -> None:
    """Plan order streamed: the reduced group's one verdict stands where its first instance was."""
    def rec(base_id: str, test: str, status: str, **extra: Any) -> dict[str, Any]:
        return {"suite": "s.yaml", "base_id": base_id, "test": test, "test_id": base_id, "name": test,
                "provider": "bot", "status": status, "score": 1.0 if status == "passed" else 0.0, **extra}

    records = [rec("a", "a", "passed"), rec("r[n=1]", "r", "passed", reduce="min", threshold=0.5),
               rec("r[n=2]", "r", "failed", reduce="min", threshold=0.5), rec("b", "b", "passed")]
    suites = [{"path": "s.yaml", "min_pass_rate": 1.0, "max_errors": 0}]
    whole = finalize({"suites": suites, "results": records}, None, False)
    streamed = finalize({"suites": suites, "results": DiskRows(records)}, None, False, stream=True)
    assert [(v["test_id"], v["status"]) for v in streamed["verdicts"]] == [("a", "passed"), ("r", "failed"),
                                                                           ("b", "passed")]
    assert list(streamed["verdicts"]) == whole["verdicts"]


def test_the_gate_names_the_first_critical_failures_and_counts_the_rest() -> None:
    vs = [Verdict("s.yaml", f"t{i}", "t", "bot", "failed", 1, 0, 0.0, False, 0.0, 0.0, True, True, False, False,
                  False, [i], "failed") for i in range(CRITICAL_MOST + 7)]
    counted = VerdictTally(False, vs)
    mine: Tally = counted.suite("s.yaml")
    assert len(mine.critical) == CRITICAL_MOST and mine.critical_more == 7
    assert mine.critical_text().endswith("t49 @ bot and 7 more")
    assert mine.failed == CRITICAL_MOST + 7
