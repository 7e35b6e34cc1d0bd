"""`finalize` reads a run's light records once (docs/en/scale-and-ray.md#memory): a large run's are a
`DiskRows` on disk, where every pass decodes every row, so the verdicts and every aggregate (summary,
metrics, curves, red lines, juries, pairwise, attacks, path warnings) are fed from one pass."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from evalspec import run
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


def test_finalize_decodes_each_light_record_once_and_gives_what_the_list_gives(tmp_path: Path) -> None:
    (tmp_path / "bot.py").write_text(BOT, encoding="utf-8")
    (tmp_path / "s.yaml").write_text(SUITE, encoding="utf-8")
    data: dict[str, Any] = run([tmp_path / "s.yaml"], options=RunOptions(run_dir=tmp_path / "run",
                                                                         use_cache=False)).data
    rows = CountedRows(light(r) for r in data["results"])
    streamed = finalize({**copy.deepcopy(data), "results": rows}, None, False, stream=True)
    assert len(data["results"]) == 9  # 3 repeats, 2 points × 2 repeats, 2 reduced instances
    assert (rows.passes, rows.decoded) == (1, 9)
    whole = finalize({**copy.deepcopy(data), "results": list(data["results"])}, None, False)
    for key in ("verdicts", "curves", "slas", "summary", "gate"):
        assert streamed[key] == whole[key], key
    summary = whole["summary"]  # the run feeds the aggregates it is meant to
    assert summary["metrics"] and summary["red_lines"] and whole["curves"] and whole["slas"]
    assert summary["red_lines"][0]["breaches"] >= 1
