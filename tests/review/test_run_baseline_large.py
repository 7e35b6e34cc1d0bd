"""`evalspec run --baseline` of a large run (docs/en/scale-and-ray.md#memory): the baseline's records are
read from disk one at a time, the diff's rows go to disk as they are made, confirmation replays change
them there, and run.json writes them a line each — what a run keeps does not grow with the baseline."""

from __future__ import annotations

import gc
import json
import tracemalloc
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from evalspec.play import runner
from evalspec.results.runjson import read_run
from evalspec.results.stream import DiskRows
from tests import ROOT
from tests.helpers import invoke

RUN_SCHEMA = json.loads((ROOT / "schema" / "run.schema.json").read_text(encoding="utf-8"))

# `mode.txt` says which side is played; on HEAD `回归` always fails and `不稳` fails every other call
BOT = '''\
from pathlib import Path

HERE = Path(__file__).parent


def respond(messages, context):
    head = (HERE / "mode.txt").read_text().strip() == "head"
    test = context["test_id"]
    if test == "不稳" and head:
        counter = HERE / "calls.txt"
        n = int(counter.read_text()) + 1 if counter.exists() else 1
        counter.write_text(str(n))
        return "坏" if n % 2 else "好"
    fails = {"修好": not head, "回归": head, "仍坏": True}.get(test, False)
    return "坏" if fails else "好"
'''

IDS = ["修好", "回归", "不稳", "仍坏", "稳定", "稳定二"]


def side(project: Path, mode: str, *args: str) -> tuple[int, str, dict[str, Any]]:
    (project / "mode.txt").write_text(mode)
    out = f"{mode}.json"
    code, text = invoke("run", "s.yaml", "-o", out, *args)
    return code, text, json.loads((project / out).read_text(encoding="utf-8"))


@pytest.fixture
def project(in_tmp: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(runner, "STREAM_ABOVE", 3)  # read back from the journal above 3 records, as above 5,000
    (in_tmp / "bot.py").write_text(BOT, encoding="utf-8")
    tests = "".join(f"  - id: {i}\n    conversation:\n      - user: 你好\n        assert: [{{equals: 好}}]\n" for i in IDS)
    (in_tmp / "s.yaml").write_text(f"providers:\n  - id: bot\n    python: bot.py:respond\ntests:\n{tests}", encoding="utf-8")
    return in_tmp


def test_a_large_runs_diff_is_confirmed_gated_and_written_like_a_small_ones(project: Path) -> None:
    side(project, "base", "--no-cache")
    code, out, head = side(project, "head", "--baseline", "base.json", "--gate", "regressions", "--md", "pr.md")
    jsonschema.validate(head, RUN_SCHEMA)
    rows = {r["test_id"]: r for r in head["baseline"]["rows"]}
    assert {k: r["category"] for k, r in rows.items()} == {
        "修好": "fixed", "回归": "regressed", "不稳": "flaky", "仍坏": "still failing", "稳定": "unchanged",
        "稳定二": "unchanged"}
    assert rows["回归"]["replays"] == ["failed", "failed"]
    assert rows["不稳"]["replays"] == ["passed", "failed"]  # its row changed on disk by the replays
    assert head["baseline"]["counts"]["flaky"] == 1 and head["baseline"]["counts"]["regressed"] == 1
    assert code == 1, out
    assert head["gate"]["reasons"] == ["s.yaml: regressed: 回归 @ bot"]
    md = (project / "pr.md").read_text(encoding="utf-8")
    assert md.index("regressed**") < md.index("flaky**") < md.index("fixed**")
    # the run.json with its rows a line each reads back with the rows left on disk, for `report` and `grade`
    streamed = read_run(project / "head.json", check=True, stream=True)["baseline"]
    assert isinstance(streamed["rows"], DiskRows) and list(streamed["rows"]) == head["baseline"]["rows"]
    assert invoke("report", "head.json", "--md", "again.md")[0] == 0
    assert "flaky**" in (project / "again.md").read_text(encoding="utf-8")
    code, out = invoke("grade", "head.json", "-o", "graded.json")
    assert code == 1, out
    graded = json.loads((project / "graded.json").read_text(encoding="utf-8"))
    assert graded["baseline"]["rows"] == head["baseline"]["rows"]


def test_a_row_of_the_baseline_that_breaks_the_run_schema_is_named(project: Path) -> None:
    side(project, "base", "--no-cache")
    side(project, "head", "--baseline", "base.json")
    text = (project / "head.json").read_text(encoding="utf-8").replace('"category":"flaky"', '"category":"bogus"', 1)
    (project / "head.json").write_text(text, encoding="utf-8")
    code, out = invoke("diff", "base.json", "head.json")
    assert code == 2, out
    assert "baseline.rows[2]" in out and "'bogus' is not one of" in out, out


def peak_of_head_run(project: Path, n: int) -> int:
    """Bytes at the peak of `run --baseline` of a `dataset:` test of `n` rows against a run of the same."""
    (project / "rows.jsonl").write_text("".join(json.dumps({"q": f"你好（{i}）"}, ensure_ascii=False) + "\n"
                                                for i in range(n)), encoding="utf-8")
    (project / "s.yaml").write_text("""\
providers:
  - id: bot
    python: bot.py:respond
tests:
  - id: 行
    dataset: rows.jsonl
    conversation:
      - user: "{{ q }}"
        assert: [{equals: 好}]
""", encoding="utf-8")
    side(project, "base", "--no-cache")
    (project / "mode.txt").write_text("head")
    gc.collect()
    tracemalloc.start()
    try:
        code, out = invoke("run", "s.yaml", "-o", "head.json", "--no-cache", "--baseline", "base.json")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert code == 0, out
    assert json.loads((project / "head.json").read_text(encoding="utf-8"))["baseline"]["counts"]["unchanged"] == n
    return peak


def test_what_run_baseline_keeps_does_not_grow_with_the_baseline(project: Path) -> None:
    peak_of_head_run(project, 10)  # imports and caches first
    small, large = peak_of_head_run(project, 40), peak_of_head_run(project, 160)
    per_conversation = (large - small) / 120
    assert per_conversation < 2000, per_conversation  # ~450 B; 28,700 when the baseline's records and the rows were kept
