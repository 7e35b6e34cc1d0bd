"""`grade` keeps a record's attribution when its status did not change (review/triage.py `keep_attributions`),
holding only the attributed records of a large run, chosen by their light forms (docs/en/scale-and-ray.md#memory)."""

from __future__ import annotations

from array import array
from pathlib import Path
from typing import Any, cast

from evalspec.results.journal import encode
from evalspec.results.rundata import RunData
from evalspec.results.stream import DiskRows, JournalRecords, light
from evalspec.review.triage import keep_attributions


def record(i: int, status: str, **extra: Any) -> dict[str, Any]:
    return {"suite": "s.yaml", "base_id": f"t{i}", "test": f"t{i}", "test_id": f"t{i}", "key": f"键{i}",
            "name": "测试", "provider": "bot", "status": status, "score": 1.0,
            "transcript": [{"role": "user", "content": "你好"}], **extra}


def journal(tmp_path: Path, records: list[dict[str, Any]]) -> JournalRecords:
    path, offsets, end = tmp_path / "journal.jsonl", array("q"), 0
    with path.open("wb") as fh:
        for r in records:
            line = encode(r) + b"\n"
            fh.write(line)
            offsets.append(end)
            end += len(line)
    return JournalRecords(path, offsets, DiskRows(light(r) for r in records))


def test_an_attribution_is_kept_where_the_status_held(tmp_path: Path) -> None:
    before = [record(i, "failed") for i in range(6)]
    before[1].update(attribution="bot_defect", attribution_by="triage")
    before[4].update(attribution="rule_misjudgment")
    after = [record(i, "failed" if i != 4 else "passed") for i in range(6)]
    keep_attributions(cast(RunData, {"results": journal(tmp_path, before)}), cast(RunData, {"results": after}))
    assert [r.get("attribution") for r in after] == [None, "bot_defect", None, None, None, None]
    assert after[1]["attribution_by"] == "triage"


def test_a_run_with_nothing_attributed_reads_none_of_its_records_back(tmp_path: Path) -> None:
    before = journal(tmp_path, [record(i, "failed") for i in range(50)])
    before.path.unlink()  # a record read back would fail: the light forms alone say nothing is carried over
    after = [record(i, "failed") for i in range(50)]
    keep_attributions(cast(RunData, {"results": before}), cast(RunData, {"results": after}))
    assert not any("attribution" in r for r in after)
