"""run.json's aggregates worked out from light records kept on disk (`stream.DiskRows`, a large run,
`report` and `grade`) are byte for byte those worked out from records in memory
(docs/en/scale-and-ray.md#memory): varied runs (repeats, a curve with an SLA, `reduce`, errors, a critical
red line, a metric, xfail and draft tests, two providers) and the reporters' fixed run."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from evalspec import run
from evalspec.play.runner import RunOptions
from evalspec.results.aggregate import finalize
from evalspec.results.runjson import read_run, untyped, write_json
from evalspec.results.stream import DiskRows, JournalRecords

BOT = '''
def respond(messages, context):
    text = messages[-1]["content"]
    if "boom" in text:
        raise RuntimeError("坏了")
    if "phone" in text:
        return "call 13812345678"
    return "收到：" + text + (" Alice" if "Alice" in str(messages) else "")
'''

SUITE = """\
providers:
  - id: bot
    python: bot.py:respond
  - id: window-1
    python: bot.py:respond
    history: {mode: window, turns: 1}
options: {cache: false}
defaults:
  assert:
    - not-regex: "1[3-9]\\\\d{9}"
      scope: each_turn
      severity: critical
tests:
  - id: repeated
    repeat: {n: 3, pass: majority}
    conversation: [{user: 你好}, {user: 续航多少？}]
    assert: [{contains: 收到, metric: 礼貌}]
  - id: curve
    matrix: {distance: [0, 1, 3]}
    curve: {x: distance, summary: stable_range}
    sla: [{at: 1, min_score: 0.9}]
    conversation:
      - user: I am Alice
      - filler: {count: "{{ distance }}", pool: [one two three]}
      - user: who am I?
        assert: [{contains: Alice}]
  - id: reduced
    matrix: {n: [1, 2, 3]}
    reduce: mean
    conversation: [{user: "{{ 'boom' if n == 3 else 'hi' }}"}]
    assert: [{icontains: 收到}]
  - id: leaks
    conversation: [{user: phone please}]
  - id: known
    xfail: 还没修
    conversation: [{user: hi}]
    assert: [{contains: nope}]
  - id: draft
    draft: true
    conversation: [{user: boom}]
"""


def rewritten(path: Path, stream: bool) -> bytes:
    """run.json at `path` read back (streamed or whole), its aggregates worked out again, written out."""
    data = untyped(read_run(path, stream=stream))
    assert isinstance(data["results"], JournalRecords) == stream
    if stream:
        assert isinstance(data["results"].light, DiskRows)  # the light records are on disk
    for key in ("verdicts", "curves", "slas", "summary", "gate"):
        data.pop(key)
    finalize(data, None, False)
    out = path.with_name(f"again-{stream}.json")
    write_json(out, data)
    return out.read_bytes()


@pytest.fixture(scope="module")
def varied(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("varied")
    (tmp / "bot.py").write_text(BOT, encoding="utf-8")
    (tmp / "s.yaml").write_text(SUITE, encoding="utf-8")
    run([tmp / "s.yaml"], output=tmp / "run.json", options=RunOptions(run_dir=tmp / "run", use_cache=False))
    return tmp / "run.json"


def test_a_varied_run_is_the_same_from_records_on_disk_and_in_memory(varied: Path) -> None:
    written = varied.read_bytes()
    data = read_run(varied)
    statuses = {v["status"] for v in data["verdicts"]}
    assert {"passed", "failed", "error", "xfailed"} <= statuses and data["curves"] and data["slas"]
    assert rewritten(varied, stream=True) == rewritten(varied, stream=False) == written


def test_the_reporters_fixed_run_is_the_same_from_records_on_disk_and_in_memory(tmp_path: Path) -> None:
    path = tmp_path / "run.json"
    shutil.copy(Path(__file__).parent.parent / "reporters" / "fixtures" / "run.json", path)
    write_json(path, read_run(path))  # laid out one record per line, as evalspec writes it
    assert rewritten(path, stream=True) == rewritten(path, stream=False)


def test_disk_rows_read_back_in_order_with_their_changes() -> None:
    rows = DiskRows({"i": i, "text": "行" * (i % 7)} for i in range(3000))
    DiskRows.BLOCK = 64  # rows across block boundaries (and a row longer than a block)
    try:
        rows.append({"i": 3000, "text": "长" * 100})
        rows.update(5, {"attribution": "bot_defect"})
        assert [r["i"] for r in rows] == list(range(3001))
        assert rows[5] == {"i": 5, "text": "行" * 5, "attribution": "bot_defect"} == list(rows)[5]
        assert rows[-1]["text"] == "长" * 100 and rows[10:12] == [{"i": 10, "text": "行" * 3}, {"i": 11, "text": "行" * 4}]
    finally:
        DiskRows.BLOCK = 1 << 20
