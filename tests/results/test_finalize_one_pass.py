"""`finalize` reads a run's light records once (docs/en/scale-and-ray.md#memory): a large run's are a
`DiskRows` on disk, where every pass decodes every row, so the verdicts and every aggregate (summary,
metrics, curves, red lines, juries, pairwise, attacks, path warnings) are fed from one pass."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from evalspec import run
from evalspec.core.errors import ConfigError
from evalspec.play.runner import RunOptions
from evalspec.results.aggregate import finalize
from evalspec.results.stream import DiskRows, light

BOT = '''
def respond(messages, context):
    return "是，收到" if context["repeat"] % 2 == 1 else "否，电话 13812345678"
'''

SUITE = """\
providers:
  - {id: bot, python: bot.py:respond}
tests:
  - id: rep
    repeat: {n: 3, pass: majority}
    conversation:
      - user: 你好
        assert:
          - {contains: 是, metric: 礼貌}
          - {not-regex: "1[3-9]\\\\d{9}", severity: critical, max_rate: 0.5}
  - id: decay
    matrix: {distance: [1, 2]}
    repeat: 2
    curve: distance
    sla: [{at: 2, min_score: 0.8}]
    conversation: [{user: "{{ distance }}", assert: [{contains: 是}]}]
  - id: red
    matrix: {n: [1, 2]}
    reduce: min
    conversation: [{user: "{{ n }}", assert: [{contains: 是, metric: 底线}]}]
"""


class CountedRows(DiskRows):
    """A `DiskRows` that counts its passes and the rows it decodes."""

    def __init__(self, rows: Any) -> None:
        super().__init__(rows)
        self.passes = self.decoded = 0

    def __iter__(self) -> Iterator[dict[str, Any]]:
        self.passes += 1
        return super().__iter__()

    def _row(self, index: int, line: bytes) -> dict[str, Any]:
        self.decoded += 1
        return super()._row(index, line)


def played(folder: Path) -> dict[str, Any]:
    """The run of SUITE in `folder`: 3 repeats of `rep`, 2 points × 2 repeats of `decay`, 2 reduced instances."""
    (folder / "bot.py").write_text(BOT, encoding="utf-8")
    (folder / "s.yaml").write_text(SUITE, encoding="utf-8")
    data: dict[str, Any] = run([folder / "s.yaml"], options=RunOptions(run_dir=folder / "run", use_cache=False)).data
    return data


def test_finalize_decodes_each_light_record_once_and_gives_what_the_list_gives(tmp_path: Path) -> None:
    data = played(tmp_path)
    rows = CountedRows(light(r) for r in data["results"])
    streamed = finalize({**copy.deepcopy(data), "results": rows}, None, False, stream=True)
    assert len(data["results"]) == 9  # 3 repeats, 2 points × 2 repeats, 2 reduced instances
    # one pass for every aggregate (there were eleven); a second only when the check that each test's records
    # are together suspects a repeat in its bit table (the records' places hash differently in every tmp_path)
    assert (rows.passes, rows.decoded) in ((1, 9), (2, 18))
    whole = finalize({**copy.deepcopy(data), "results": list(data["results"])}, None, False)
    for key in ("verdicts", "curves", "slas", "summary", "gate"):
        assert streamed[key] == whole[key], key
    summary = whole["summary"]  # the run feeds the aggregates it is meant to
    assert summary["metrics"] and summary["red_lines"] and whole["curves"] and whole["slas"]
    assert summary["red_lines"][0]["breaches"] >= 1


def test_an_instance_whose_records_are_apart_is_refused_not_made_two_verdicts(tmp_path: Path) -> None:
    # a large run.json edited by hand: `rep`'s third repeat moved to the end. The verdicts, made as the
    # records go by, made `rep` twice (2 of its repeats, then 1): a majority failure could read as a pass
    data = played(tmp_path)
    records = [light(r) for r in data["results"]]
    assert [r["base_id"] for r in records[:3]] == ["rep"] * 3
    moved = records[:2] + records[3:] + records[2:3]
    with pytest.raises(ConfigError) as refused:
        finalize({**copy.deepcopy(data), "results": DiskRows(moved)}, None, False, stream=True)
    assert "the records of rep (" in str(refused.value) and "(records 1 and 9)" in str(refused.value)
    # the same records in memory are grouped whole, whatever their order: one verdict for `rep`
    whole = finalize({**copy.deepcopy(data), "results": list(moved)}, None, False)
    assert [v["test_id"] for v in whole["verdicts"]].count("rep") == 1


def test_a_reduced_test_whose_instances_are_apart_is_refused(tmp_path: Path) -> None:
    # `red` (reduce: min over n = 1, 2) with its first instance moved before `decay`: each instance's
    # records are together, but the test's verdict would be made twice, each the min of one instance
    data = played(tmp_path)
    records = [light(r) for r in data["results"]]
    assert [r["test"] for r in records[7:]] == ["red", "red"]
    moved = records[:3] + records[7:8] + records[3:7] + records[8:]
    with pytest.raises(ConfigError) as refused:
        finalize({**copy.deepcopy(data), "results": DiskRows(moved)}, None, False, stream=True)
    assert "the records of red (" in str(refused.value) and "(records 4 and 9)" in str(refused.value)
    kept = finalize({**copy.deepcopy(data), "results": DiskRows(records)}, None, False, stream=True)
    assert len(kept["verdicts"]) == len(finalize({**copy.deepcopy(data), "results": records}, None, False)["verdicts"])
