"""The diff's join: rows in HEAD's order then what only the base had, whatever the order of either run's
records, and a large diff's rows on disk with nothing per conversation kept in memory
(docs/en/scale-and-ray.md#memory)."""

from __future__ import annotations

import gc
import json
import tracemalloc
from array import array
from pathlib import Path
from typing import Any

from evalspec.results.compare import compare_runs
from evalspec.results.stream import DiskRows, Spool
from tests.results.helpers import rec, run


def test_rows_follow_heads_order_then_the_bases_whatever_the_order_of_the_records() -> None:
    # repeats interleaved, a test added, one removed, the rest reordered
    base = run(rec("乙", "passed", repeat=1, n=2), rec("甲", "passed", repeat=1, n=2), rec("丙", "passed"),
               rec("乙", "passed", repeat=2, n=2), rec("甲", "passed", repeat=2, n=2), rec("丁", "failed"))
    head = run(rec("戊", "failed"), rec("甲", "passed", repeat=1, n=2), rec("乙", "passed", repeat=1, n=2),
               rec("甲", "failed", repeat=2, n=2), rec("乙", "passed", repeat=2, n=2))
    diff = compare_runs(base, head)
    assert [(r["test_id"], r["category"]) for r in diff["rows"]] == [
        ("戊", "new failing"), ("甲", "regressed"), ("乙", "unchanged"), ("丙", "removed"), ("丁", "removed")]
    assert [(r["head"] or {}).get("n") for r in diff["rows"]] == [1, 2, 2, None, None]


def test_the_same_test_under_two_providers_and_two_suites_is_four_rows() -> None:
    records = [rec("t", s, provider=p, suite=f"suites/{x}.yaml")
               for x in ("a", "b") for p, s in (("甲", "passed"), ("乙", "failed"))]
    diff = compare_runs(run(*records), run(*reversed(records)))
    assert [(r["suite"], r["provider"]) for r in diff["rows"]] == [
        ("suites/b.yaml", "乙"), ("suites/b.yaml", "甲"), ("suites/a.yaml", "乙"), ("suites/a.yaml", "甲")]
    assert {r["category"] for r in diff["rows"]} == {"unchanged", "still failing"}


def test_rows_on_disk_are_the_rows_in_memory_and_name_each_problems_record() -> None:
    base = run(*(rec(f"t{i}", "passed") for i in range(5)))
    failing = {"type": "contains", "scope": "turn", "turn": 1, "pass": False, "score": 0.0, "value": "收到",
               "reason": "没有收到", "evidence": [], "error": None}
    head = run(*(rec(f"t{i}", "failed" if i % 2 else "passed", assertions=[failing] if i % 2 else [])
                 for i in range(5)))
    problems = array("q")
    on_disk = compare_runs(base, head, rows_on_disk=True, problems=problems)
    assert isinstance(on_disk["rows"], DiskRows)
    assert json.dumps({**on_disk, "rows": list(on_disk["rows"])}, ensure_ascii=False) == \
        json.dumps(compare_runs(base, head), ensure_ascii=False)
    assert list(problems) == [-1, 1, -1, 3, -1]
    assert on_disk["counts"]["regressed"] == 2 and on_disk["exit_code"] == 1


def _streamed(path: Path, n: int, failing_every: int) -> Any:
    records = [rec(f"t{i}", "failed" if i % failing_every == 1 else "passed",
                   transcript=[{"role": "user", "content": "你好"},
                               {"role": "assistant", "content": "收到", "latency_ms": 10 + i % 7}])
               for i in range(n)]
    spool = Spool(path)  # the records on disk, read back one at a time, as a large run's are
    for record in records:
        spool.add(record)
    return {"run_id": path.stem, "started_at": "2026-11-29T00:00:00+00:00", "results": spool.close(), "curves": []}


def _peak(base: Any, head: Any) -> int:
    gc.collect()  # no garbage of an earlier test or try counted in this one's peak
    tracemalloc.start()
    try:
        diff = compare_runs(base, head, rows_on_disk=True, problems=array("q"))
        assert diff["counts"]["regressed"] > 0
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_a_diffs_memory_does_not_grow_with_the_conversations(tmp_path: Path) -> None:
    # the first diff fills the bounded caches of shared words and checks (at most 10,000 entries each,
    # filled or not by the tests before this one): measured after it, only what grows with a diff shows
    _peak(_streamed(tmp_path / "warm-b.jsonl", 6000, 50), _streamed(tmp_path / "warm-h.jsonl", 6000, 40))
    peaks = []
    for n in (3000, 6000):
        base, head = _streamed(tmp_path / f"b{n}.jsonl", n, 50), _streamed(tmp_path / f"h{n}.jsonl", n, 40)
        peaks.append(min(_peak(base, head) for _ in range(2)))  # a collection's timing moves one peak
    # an 8-byte position per row is all that may grow (the rows and the join are on disk)
    assert peaks[1] - peaks[0] < 3000 * 30, f"{peaks[0]} → {peaks[1]} bytes"
